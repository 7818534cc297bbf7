//! Extents: the size of each dimension, static (`Const<N>`) or dynamic (`Dyn`), as a type.
//!
//! The rank is a compile-time constant and only dynamic extents take space:
//! `(Const<2>, Dyn)` stores one `usize`, `(Const<2>, Const<3>)` none, [`Dims<R>`] all `R`.
//!
//! ```
//! use dlmd::extents::{Const, Dims, Dyn, Extents};
//!
//! let e = (Const::<2>, Dyn(5));
//! assert_eq!(<(Const<2>, Dyn)>::RANK, 2);
//! assert_eq!(e.to_array(), [2, 5]);
//! assert_eq!(size_of::<(Const<2>, Const<3>)>(), 0);
//! assert_eq!(Dims::new([4, 1, 3]).to_array(), [4, 1, 3]);
//! ```

use core::fmt::Debug;
use core::hash::Hash;

/// Why a list of extents does not fit an extents type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ExtentsError {
    /// A static extent differs from the value given for its dimension.
    #[error("extent {found} of dimension {dim} does not match the static extent {expected}")]
    StaticMismatch {
        /// The dimension.
        dim: usize,
        /// The extent the type fixes.
        expected: usize,
        /// The extent given.
        found: usize,
    },
}

mod sealed {
    pub trait Sealed {}
}

/// One dimension's extent: [`Const<N>`] or [`Dyn`].
pub trait Extent: Copy + Debug + Eq + Hash + Send + Sync + 'static + sealed::Sealed {
    /// The extent when it is part of the type.
    const STATIC: Option<usize>;
    /// The extent.
    fn get(self) -> usize;
    /// The extent `value`, or `None` when the type fixes another one.
    fn new(value: usize) -> Option<Self>;
    /// The extent `value` where the type does not fix it; the type's own otherwise.
    #[doc(hidden)]
    fn new_unchecked(value: usize) -> Self;
}

/// A static extent of `N`: takes no space.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Const<const N: usize>;

/// A dynamic extent, stored.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Dyn(pub usize);

impl<const N: usize> sealed::Sealed for Const<N> {}
impl sealed::Sealed for Dyn {}

impl<const N: usize> Extent for Const<N> {
    const STATIC: Option<usize> = Some(N);
    #[inline(always)]
    fn get(self) -> usize {
        N
    }
    #[inline]
    fn new(value: usize) -> Option<Self> {
        (value == N).then_some(Const)
    }
    #[inline(always)]
    fn new_unchecked(_: usize) -> Self {
        Const
    }
}

impl Extent for Dyn {
    const STATIC: Option<usize> = None;
    #[inline(always)]
    fn get(self) -> usize {
        self.0
    }
    #[inline]
    fn new(value: usize) -> Option<Self> {
        Some(Dyn(value))
    }
    #[inline(always)]
    fn new_unchecked(value: usize) -> Self {
        Dyn(value)
    }
}

/// `[usize; R]`: an index, or a list of extents, of rank `R`, with the arrays of the same rank
/// that mappings and DLPack need.
pub trait IndexArray:
    Copy + Debug + Eq + Hash + AsRef<[usize]> + AsMut<[usize]> + Send + Sync + 'static + sealed::Sealed
{
    /// The rank.
    const RANK: usize;
    /// `[isize; R]`, for strides that may be negative.
    type Isize: Copy + Debug + Eq + Hash + AsRef<[isize]> + AsMut<[isize]> + Send + Sync + 'static;
    /// `[i64; R]`, for DLPack shapes and strides.
    type I64: Copy + Debug + Eq + Hash + AsRef<[i64]> + AsMut<[i64]> + Send + Sync + 'static;
    /// All zeros.
    fn zeros() -> Self;
    /// All zeros, as `isize`.
    fn isize_zeros() -> Self::Isize;
    /// All zeros, as `i64`.
    fn i64_zeros() -> Self::I64;
}

impl<const R: usize> sealed::Sealed for [usize; R] {}

impl<const R: usize> IndexArray for [usize; R] {
    const RANK: usize = R;
    type Isize = [isize; R];
    type I64 = [i64; R];
    #[inline(always)]
    fn zeros() -> Self {
        [0; R]
    }
    #[inline(always)]
    fn isize_zeros() -> [isize; R] {
        [0; R]
    }
    #[inline(always)]
    fn i64_zeros() -> [i64; R] {
        [0; R]
    }
}

/// The extents of every dimension of a view: a tuple of [`Const`]/[`Dyn`] or [`Dims<R>`].
pub trait Extents: Copy + Debug + Eq + Hash + Send + Sync + 'static + sealed::Sealed {
    /// Number of dimensions.
    const RANK: usize;
    /// Number of dynamic dimensions.
    const RANK_DYNAMIC: usize;
    /// `[usize; RANK]`.
    type Index: IndexArray;
    /// Every extent.
    fn to_array(&self) -> Self::Index;
    /// The static extent of dimension `dim`, `None` if it is dynamic or `dim >= RANK`.
    fn static_extent(dim: usize) -> Option<usize>;
    /// Extents from a list, checking the static ones.
    fn from_array(extents: Self::Index) -> Result<Self, ExtentsError>;
    /// Extents from a list whose static extents are known to match (a kernel's parameter,
    /// checked on the host): the static ones are the type's.
    #[doc(hidden)]
    fn from_array_unchecked(extents: Self::Index) -> Self;
    /// The rank and the static extents (`n + 1` for `Const<n>`, 0 for a dynamic extent), mixed
    /// into a kernel's signature digest.
    #[doc(hidden)]
    const FINGERPRINT: u64;
    /// The number of elements, where every extent is static (and the product fits `usize`):
    /// what a block-shared tile of these extents holds.
    const STATIC_SIZE: Option<usize>;
    /// The static extents of the first and the last dimension (`None` where dynamic, or for
    /// rank 0): what a padded block-shared tile's span is computed from.
    #[doc(hidden)]
    const STATIC_ENDS: (Option<usize>, Option<usize>);

    /// The extent of dimension `dim`.
    ///
    /// # Panics
    ///
    /// If `dim >= RANK`.
    #[inline]
    fn extent(&self, dim: usize) -> usize {
        self.to_array().as_ref()[dim]
    }

    /// The number of elements, or `None` if it overflows `usize`.
    #[inline]
    fn checked_size(&self) -> Option<usize> {
        self.to_array()
            .as_ref()
            .iter()
            .try_fold(1usize, |acc, &e| acc.checked_mul(e))
    }
}

/// All-dynamic extents of rank `R`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Dims<const R: usize>(pub [usize; R]);

impl<const R: usize> Dims<R> {
    /// The extents `extents`.
    pub const fn new(extents: [usize; R]) -> Self {
        Self(extents)
    }
}

impl<const R: usize> sealed::Sealed for Dims<R> {}

impl<const R: usize> Extents for Dims<R> {
    const RANK: usize = R;
    const RANK_DYNAMIC: usize = R;
    const STATIC_SIZE: Option<usize> = if R == 0 { Some(1) } else { None };
    const STATIC_ENDS: (Option<usize>, Option<usize>) = (None, None);
    const FINGERPRINT: u64 = {
        let mut hash = crate::fingerprint::mix(crate::fingerprint::START, R as u64);
        let mut i = 0;
        while i < R {
            hash = crate::fingerprint::mix(hash, 0);
            i += 1;
        }
        hash
    };
    type Index = [usize; R];
    #[inline(always)]
    fn to_array(&self) -> [usize; R] {
        self.0
    }
    #[inline]
    fn static_extent(_: usize) -> Option<usize> {
        None
    }
    #[inline]
    fn from_array(extents: [usize; R]) -> Result<Self, ExtentsError> {
        Ok(Self(extents))
    }
    #[inline(always)]
    fn from_array_unchecked(extents: [usize; R]) -> Self {
        Self(extents)
    }
    #[inline(always)]
    fn extent(&self, dim: usize) -> usize {
        self.0[dim]
    }
}

impl sealed::Sealed for () {}

impl Extents for () {
    const RANK: usize = 0;
    const RANK_DYNAMIC: usize = 0;
    const STATIC_SIZE: Option<usize> = Some(1);
    const STATIC_ENDS: (Option<usize>, Option<usize>) = (None, None);
    const FINGERPRINT: u64 = crate::fingerprint::mix(crate::fingerprint::START, 0);
    type Index = [usize; 0];
    #[inline(always)]
    fn to_array(&self) -> [usize; 0] {
        []
    }
    #[inline]
    fn static_extent(_: usize) -> Option<usize> {
        None
    }
    #[inline]
    fn from_array(_: [usize; 0]) -> Result<Self, ExtentsError> {
        Ok(())
    }
    #[inline(always)]
    fn from_array_unchecked(_: [usize; 0]) -> Self {}
}

macro_rules! tuple_extents {
    ($rank:literal; $($name:ident $index:tt),+) => {
        impl<$($name: Extent),+> sealed::Sealed for ($($name,)+) {}

        impl<$($name: Extent),+> Extents for ($($name,)+) {
            const RANK: usize = $rank;
            const RANK_DYNAMIC: usize = 0 $(+ $name::STATIC.is_none() as usize)+;
            const STATIC_SIZE: Option<usize> = {
                let size = Some(1usize);
                $(
                    let size = match (size, $name::STATIC) {
                        (Some(size), Some(n)) => size.checked_mul(n),
                        _ => None,
                    };
                )+
                size
            };
            const STATIC_ENDS: (Option<usize>, Option<usize>) = {
                let statics = [$($name::STATIC),+];
                (statics[0], statics[$rank - 1])
            };
            const FINGERPRINT: u64 = {
                let hash = crate::fingerprint::mix(crate::fingerprint::START, $rank);
                $(
                    let hash = crate::fingerprint::mix(hash, match $name::STATIC {
                        Some(n) => n as u64 + 1,
                        None => 0,
                    });
                )+
                hash
            };
            type Index = [usize; $rank];
            #[inline(always)]
            fn to_array(&self) -> [usize; $rank] {
                [$(self.$index.get()),+]
            }
            #[inline]
            fn static_extent(dim: usize) -> Option<usize> {
                [$($name::STATIC),+].get(dim).copied().flatten()
            }
            #[inline]
            fn from_array(extents: [usize; $rank]) -> Result<Self, ExtentsError> {
                Ok(($(
                    match $name::new(extents[$index]) {
                        Some(e) => e,
                        None => {
                            return Err(ExtentsError::StaticMismatch {
                                dim: $index,
                                expected: $name::STATIC.unwrap_or(0),
                                found: extents[$index],
                            })
                        }
                    },
                )+))
            }
            #[inline(always)]
            fn from_array_unchecked(extents: [usize; $rank]) -> Self {
                ($($name::new_unchecked(extents[$index]),)+)
            }
        }
    };
}

tuple_extents!(1; A 0);
tuple_extents!(2; A 0, B 1);
tuple_extents!(3; A 0, B 1, C 2);
tuple_extents!(4; A 0, B 1, C 2, D 3);
tuple_extents!(5; A 0, B 1, C 2, D 3, E 4);
tuple_extents!(6; A 0, B 1, C 2, D 3, E 4, F 5);
tuple_extents!(7; A 0, B 1, C 2, D 3, E 4, F 5, G 6);
tuple_extents!(8; A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_dynamic_extents_take_space() {
        assert_eq!(size_of::<(Const<2>, Const<3>)>(), 0);
        assert_eq!(size_of::<(Const<2>, Dyn)>(), size_of::<usize>());
        assert_eq!(size_of::<Dims<4>>(), 4 * size_of::<usize>());
        assert_eq!(<(Const<2>, Dyn, Dyn)>::RANK_DYNAMIC, 2);
    }

    #[test]
    fn only_all_static_extents_have_a_static_size() {
        assert_eq!(<(Const<32>, Const<33>)>::STATIC_SIZE, Some(32 * 33));
        assert_eq!(<(Const<2>, Dyn)>::STATIC_SIZE, None);
        assert_eq!(<()>::STATIC_SIZE, Some(1));
        assert_eq!(Dims::<0>::STATIC_SIZE, Some(1));
        assert_eq!(Dims::<2>::STATIC_SIZE, None);
        assert_eq!(<(Const<4>, Dyn, Const<9>)>::STATIC_ENDS, (Some(4), Some(9)));
        assert_eq!(<(Const<4>,)>::STATIC_ENDS, (Some(4), Some(4)));
        assert_eq!(<(Const<{ usize::MAX }>, Const<2>)>::STATIC_SIZE, None);
    }

    #[test]
    fn static_extents_are_checked() {
        type E = (Const<2>, Dyn);
        assert_eq!(E::from_array([2, 7]), Ok((Const, Dyn(7))));
        assert_eq!(
            E::from_array([3, 7]),
            Err(ExtentsError::StaticMismatch {
                dim: 0,
                expected: 2,
                found: 3
            })
        );
        assert_eq!(E::static_extent(0), Some(2));
        assert_eq!(E::static_extent(1), None);
        assert_eq!(E::static_extent(2), None);
    }

    #[test]
    fn sizes() {
        assert_eq!(Dims::new([2, 3, 4]).checked_size(), Some(24));
        assert_eq!(().checked_size(), Some(1));
        assert_eq!(Dims::new([usize::MAX, 2]).checked_size(), None);
    }
}
