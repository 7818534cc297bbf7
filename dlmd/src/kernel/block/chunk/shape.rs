//! The shape a view is cut into chunks of ([`ChunkShape`]): a type, one side per dimension,
//! each a constant ([`Const<N>`]) or the view's whole extent ([`Whole`]), named in the kernel's
//! [`Block`](super::super::Block) type, so that every block of a launch cuts the view alike.

use crate::extents::{Const, IndexArray};

mod sealed {
    pub trait Sealed {}
}

/// The view's whole extent along a dimension, as a side of a [`ChunkShape`]: `(Const<1>,
/// Whole)` cuts a matrix into its rows, each a chunk.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Whole;

/// The chunk shape of a [`Block`](super::super::Block) that cuts no view: its default, which no
/// view's rank matches (a kernel that cuts a view names its shape in its `Block`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct NoChunks;

/// One side of a [`ChunkShape`]: [`Const<N>`] (`N` elements, at least 1) or [`Whole`].
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a side of a chunk shape",
    label = "a side must be the same in every block",
    note = "each side of a chunk shape is `Const<N>` (a constant) or `Whole` (the view's whole extent)"
)]
pub trait ChunkSide: sealed::Sealed + Copy {
    /// The side where it is a constant, `None` for the view's whole extent.
    #[doc(hidden)]
    const CONST: Option<usize>;
}

impl<const N: usize> sealed::Sealed for Const<N> {}
impl sealed::Sealed for Whole {}

impl<const N: usize> ChunkSide for Const<N> {
    const CONST: Option<usize> = Some(N);
}

impl ChunkSide for Whole {
    const CONST: Option<usize> = None;
}

/// The shape of the chunks [`Block::chunks`](super::super::Block::chunks) cuts a view of index
/// `I` into: a tuple of one [`ChunkSide`] per dimension, such as `(Const<64>, Const<64>)` or
/// `(Const<1>, Whole)`, named as the fourth parameter of the kernel's
/// [`Block`](super::super::Block): `Block<'_, 256, Tiles, (Const<64>, Const<64>)>`.
///
/// A shape is a type, and its sides are constants or the extents of the view it cuts, a kernel
/// parameter that every block holds alike; it is the block's type, which the kernel's signature
/// fixes for the whole grid before any of its code runs, and which no safe code changes: every
/// block cuts each view into the same chunks, and no two own one. (A shape chosen in the
/// kernel's body, by a value or by a branch between two types, could differ from block to
/// block, `64` in one and `32` in another, and their chunks would overlap.)
///
/// A chunk's box is the shape, with each [`Whole`] side the view's extent. Each constant side
/// is at least 1 and their product at most `isize::MAX` (otherwise the kernel does not
/// compile); where a shape has a `Whole` side, a constant side longer than the view's extent is
/// cut to it (a side as long covers that dimension in one chunk all the same), so that the box
/// holds no more elements than the view.
#[diagnostic::on_unimplemented(
    message = "the block's chunk shape `{Self}` does not cut a view of index `{I}`",
    label = "cut by the chunk shape of the block's type",
    note = "a block cuts its views by the chunk shape its type names, one side per dimension of the view, each \
            `Const<N>` or `Whole` (the view's whole extent): `Block<'_, 256, Tiles, (Const<64>, Const<64>)>`, \
            `Block<'_, 128, (), (Const<1>, Whole)>`; the default, `NoChunks`, cuts no view"
)]
pub trait ChunkShape<I: IndexArray>: sealed::Sealed + Copy {
    /// The product of the constant sides, each at least 1, and at most `isize::MAX` (checked
    /// when the kernel is compiled).
    #[doc(hidden)]
    const CONST_SIZE: usize;
    /// Whether a side is the view's whole extent.
    #[doc(hidden)]
    const HAS_WHOLE: bool;
    /// The chunk rows a group of the order holds ([`Grouped`]); 0 for memory order.
    #[doc(hidden)]
    const GROUP: usize = 0;
    /// Whether the chunks are numbered from a matrix's last rows ([`LastRowsFirst`]).
    #[doc(hidden)]
    const LAST_ROWS_FIRST: bool = false;
    /// The constant side along a matrix's rows (the dimension before the last; the only one of
    /// a vector), `None` for [`Whole`] or rank 0.
    #[doc(hidden)]
    const MATRIX_ROWS: Option<usize>;
    /// Whether every side before a matrix's (the last two) is `Const<1>`: a chunk is one
    /// matrix, or part of one, of a batch.
    #[doc(hidden)]
    const ONE_MATRIX: bool;

    /// The box of the chunks of a view of `extents`.
    #[doc(hidden)]
    fn box_of(extents: I) -> I;
}

/// A [`ChunkShape`] `C` whose chunks are dealt in groups of `ROWS` chunk rows, each group
/// column by column, rather than in the view's memory order: the chunks the blocks running at
/// once compute then share the rows and columns of a matrix product's operands, which they
/// find in L2 (`Grouped<(Const<128>, Const<256>), 16>` for a product of 8192² operands on an
/// H100's 132 multiprocessors). The order is part of the block's type, the same in every
/// block, so each chunk is still one block's. Views of another rank than 2 are dealt in memory
/// order.
#[derive(Debug, Default, PartialEq, Eq, Hash)]
pub struct Grouped<C, const ROWS: usize>(core::marker::PhantomData<C>);

impl<C, const ROWS: usize> Clone for Grouped<C, ROWS> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<C, const ROWS: usize> Copy for Grouped<C, ROWS> {}

impl<C, const ROWS: usize> sealed::Sealed for Grouped<C, ROWS> {}

impl<I: IndexArray, C: ChunkShape<I>, const ROWS: usize> ChunkShape<I> for Grouped<C, ROWS> {
    const CONST_SIZE: usize = {
        assert!(ROWS > 0, "a group holds at least one chunk row");
        C::CONST_SIZE
    };
    const HAS_WHOLE: bool = C::HAS_WHOLE;
    const GROUP: usize = ROWS;
    const LAST_ROWS_FIRST: bool = C::LAST_ROWS_FIRST;
    const MATRIX_ROWS: Option<usize> = C::MATRIX_ROWS;
    const ONE_MATRIX: bool = C::ONE_MATRIX;
    #[inline(always)]
    fn box_of(extents: I) -> I {
        C::box_of(extents)
    }
}

/// A [`ChunkShape`] `C` whose chunks are numbered, and so dealt to the blocks, with the chunk
/// rows (along the dimension before the last) counted from the last: the chunk holding a
/// matrix's last rows comes first (cut short where the rows are not a multiple of the side),
/// its first rows last; the other dimensions, and [`Grouped`]'s groups, are numbered as `C`
/// numbers them. Under attention's causal mask (aligned to the bottom right) the last query
/// rows see the most keys, so the blocks a grid starts first take the longest chunks and the
/// grid ends on short ones, as FlashAttention-3 orders them. Chunks cut along segments
/// ([`Chunks::in_segments`](super::Chunks::in_segments)) are numbered over every segment's
/// rows together: the last segment's last rows first, the first segment's first rows last.
/// The order is part of the block's type, the same in every block, so each chunk is still
/// one block's. A view of rank 1 has no chunk rows: a vector's shape is refused.
///
/// ```ignore
/// // One chunk of 128 query rows of a head at a time, the last rows first.
/// type AttentionBlock<'k> = Block<'k, 384, Tiles, LastRowsFirst<(Const<1>, Const<1>, Const<128>, Const<128>)>>;
/// ```
#[derive(Debug, Default, PartialEq, Eq, Hash)]
pub struct LastRowsFirst<C>(core::marker::PhantomData<C>);

impl<C> Clone for LastRowsFirst<C> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<C> Copy for LastRowsFirst<C> {}

impl<C> sealed::Sealed for LastRowsFirst<C> {}

impl<I: IndexArray, C: ChunkShape<I>> ChunkShape<I> for LastRowsFirst<C> {
    const CONST_SIZE: usize = {
        assert!(
            I::RANK >= 2,
            "`LastRowsFirst` orders the chunk rows of a matrix: a view of rank 2 or more"
        );
        C::CONST_SIZE
    };
    const HAS_WHOLE: bool = C::HAS_WHOLE;
    const GROUP: usize = C::GROUP;
    const LAST_ROWS_FIRST: bool = true;
    const MATRIX_ROWS: Option<usize> = C::MATRIX_ROWS;
    const ONE_MATRIX: bool = C::ONE_MATRIX;
    #[inline(always)]
    fn box_of(extents: I) -> I {
        C::box_of(extents)
    }
}

/// A view's index that a block of chunk shape `C` cuts: every index of `C`'s rank. The bound
/// [`Block::chunks`](super::super::Block::chunks) asks, with the view's index first, so that a
/// shape of another rank is refused as such (asked the other way round, the compiler would
/// take the index from the shape and report two ranks that differ).
#[doc(hidden)]
pub trait CutBy<C>: IndexArray {
    /// [`ChunkShape::CONST_SIZE`] of `C`.
    const CONST_SIZE: usize;
    /// [`ChunkShape::GROUP`] of `C`.
    const GROUP: usize;
    /// [`ChunkShape::LAST_ROWS_FIRST`] of `C`.
    const LAST_ROWS_FIRST: bool;
    /// [`ChunkShape::MATRIX_ROWS`] of `C`.
    const MATRIX_ROWS: Option<usize>;
    /// [`ChunkShape::ONE_MATRIX`] of `C`.
    const ONE_MATRIX: bool;

    /// [`ChunkShape::box_of`] of `C`.
    fn box_of(extents: Self) -> Self;
}

impl<I: IndexArray, C: ChunkShape<I>> CutBy<C> for I {
    const CONST_SIZE: usize = C::CONST_SIZE;
    const GROUP: usize = C::GROUP;
    const LAST_ROWS_FIRST: bool = C::LAST_ROWS_FIRST;
    const MATRIX_ROWS: Option<usize> = C::MATRIX_ROWS;
    const ONE_MATRIX: bool = C::ONE_MATRIX;

    #[inline(always)]
    fn box_of(extents: I) -> I {
        C::box_of(extents)
    }
}

/// The product of `sides`' constants, checked: each at least 1, the product at most
/// `isize::MAX`.
const fn const_size(sides: &[Option<usize>]) -> usize {
    let mut size = 1usize;
    let mut d = 0;
    while d < sides.len() {
        if let Some(n) = sides[d] {
            assert!(n > 0, "a chunk's side is at least 1 element (`Const<0>` cuts nothing)");
            size = match size.checked_mul(n) {
                Some(size) if size <= isize::MAX as usize => size,
                _ => panic!("a chunk shape holds at most `isize::MAX` elements"),
            };
        }
        d += 1;
    }
    size
}

/// The side of `sides` along a matrix's rows: the one before the last (the only one of a
/// vector).
const fn matrix_rows(sides: &[Option<usize>]) -> Option<usize> {
    sides[sides.len().saturating_sub(2)]
}

/// Whether every side of `sides` before the last two is `Some(1)`.
const fn one_matrix(sides: &[Option<usize>]) -> bool {
    let mut d = 0;
    while d + 2 < sides.len() {
        if !matches!(sides[d], Some(1)) {
            return false;
        }
        d += 1;
    }
    true
}

/// A side of a chunk's box over a view's `extent`: the side's `constant`, or the extent for a
/// [`Whole`] side; in a shape with a `Whole` side, a constant above 1 cut to the extent.
#[inline(always)]
fn side(constant: Option<usize>, has_whole: bool, extent: usize) -> usize {
    match constant {
        // A constant of 1 is never longer than the extent of a view with elements (one with none
        // has no chunks), and stays a constant the compiler sees.
        Some(n) if has_whole && n > 1 => n.min(extent),
        Some(n) => n,
        None => extent,
    }
}

impl sealed::Sealed for () {}

impl ChunkShape<[usize; 0]> for () {
    const CONST_SIZE: usize = 1;
    const HAS_WHOLE: bool = false;
    const MATRIX_ROWS: Option<usize> = None;
    const ONE_MATRIX: bool = true;
    #[inline(always)]
    fn box_of(extents: [usize; 0]) -> [usize; 0] {
        extents
    }
}

macro_rules! chunk_shapes {
    ($rank:literal; $($name:ident $index:tt),+) => {
        impl<$($name: ChunkSide),+> sealed::Sealed for ($($name,)+) {}

        impl<$($name: ChunkSide),+> ChunkShape<[usize; $rank]> for ($($name,)+) {
            const CONST_SIZE: usize = const_size(&[$($name::CONST),+]);
            const HAS_WHOLE: bool = false $(|| $name::CONST.is_none())+;
            const MATRIX_ROWS: Option<usize> = matrix_rows(&[$($name::CONST),+]);
            const ONE_MATRIX: bool = one_matrix(&[$($name::CONST),+]);
            #[inline(always)]
            fn box_of(extents: [usize; $rank]) -> [usize; $rank] {
                [$(side($name::CONST, Self::HAS_WHOLE, extents[$index])),+]
            }
        }
    };
}

chunk_shapes!(1; A 0);
chunk_shapes!(2; A 0, B 1);
chunk_shapes!(3; A 0, B 1, C 2);
chunk_shapes!(4; A 0, B 1, C 2, D 3);
chunk_shapes!(5; A 0, B 1, C 2, D 3, E 4);
chunk_shapes!(6; A 0, B 1, C 2, D 3, E 4, F 5);
chunk_shapes!(7; A 0, B 1, C 2, D 3, E 4, F 5, G 6);
chunk_shapes!(8; A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7);

#[cfg(test)]
mod tests {
    use super::{ChunkShape, Grouped, LastRowsFirst, Whole};
    use crate::extents::Const;

    #[test]
    fn constant_sides_are_the_box() {
        type Square = (Const<64>, Const<64>);
        assert_eq!(Square::box_of([1000, 3]), [64, 64]);
        assert_eq!(Square::CONST_SIZE, 4096);
        const { assert!(!Square::HAS_WHOLE) };
        assert_eq!(<(Const<256>,)>::box_of([7]), [256]);
        assert_eq!(<()>::box_of([]), [0usize; 0]);
    }

    #[test]
    fn a_shape_knows_its_matrix_rows_and_batch() {
        type Heads = (Const<1>, Const<1>, Const<128>, Const<64>);
        const { assert!(Heads::ONE_MATRIX && matches!(Heads::MATRIX_ROWS, Some(128))) };
        type Two = (Const<2>, Const<128>, Const<64>);
        const { assert!(!Two::ONE_MATRIX) };
        type Batch = (Whole, Const<64>, Const<64>);
        const { assert!(!Batch::ONE_MATRIX && matches!(Batch::MATRIX_ROWS, Some(64))) };
        type Rows = (Whole, Const<64>);
        const { assert!(Rows::ONE_MATRIX && Rows::MATRIX_ROWS.is_none()) };
        const { assert!(matches!(<(Const<256>,)>::MATRIX_ROWS, Some(256))) };
        const { assert!(<()>::ONE_MATRIX && <()>::MATRIX_ROWS.is_none()) };
    }

    #[test]
    fn an_order_nested_in_another_keeps_both() {
        type Square = (Const<2>, Const<1>);
        const { assert!(!<Square as ChunkShape<[usize; 2]>>::LAST_ROWS_FIRST) };
        type Last = LastRowsFirst<Square>;
        const { assert!(<Last as ChunkShape<[usize; 2]>>::LAST_ROWS_FIRST) };
        // Either way round, the groups and the order from the last rows both hold.
        type GroupedLast = Grouped<LastRowsFirst<Square>, 2>;
        type LastGrouped = LastRowsFirst<Grouped<Square, 2>>;
        const {
            assert!(<GroupedLast as ChunkShape<[usize; 2]>>::LAST_ROWS_FIRST);
            assert!(<GroupedLast as ChunkShape<[usize; 2]>>::GROUP == 2);
            assert!(<LastGrouped as ChunkShape<[usize; 2]>>::LAST_ROWS_FIRST);
            assert!(<LastGrouped as ChunkShape<[usize; 2]>>::GROUP == 2);
        };
        assert_eq!(<LastGrouped as ChunkShape<[usize; 2]>>::box_of([9, 9]), [2, 1]);
    }

    #[test]
    fn whole_sides_take_the_extent() {
        type Rows = (Const<1>, Whole);
        assert_eq!(Rows::box_of([5, 300]), [1, 300]);
        assert_eq!(Rows::box_of([0, 300]), [1, 300]);
        const { assert!(Rows::HAS_WHOLE) };
        assert_eq!(<(Whole, Whole, Whole)>::box_of([2, 3, 4]), [2, 3, 4]);
    }

    #[test]
    fn a_box_holds_no_more_elements_than_its_view() {
        // A constant side longer than the extent, beside a whole one: cut to the extent, so
        // the box's element count is the view's, however long the constant.
        type Wide = (Const<{ 1 << 40 }>, Whole);
        assert_eq!(Wide::CONST_SIZE, 1 << 40);
        let boxed = Wide::box_of([3, 1 << 40]);
        assert_eq!(boxed, [3, 1 << 40]);
        assert_eq!(boxed.iter().try_fold(1usize, |a, &s| a.checked_mul(s)), Some(3 << 40));
        assert_eq!(<(Whole, Const<8>)>::box_of([2, 5]), [2, 5]);
        assert_eq!(<(Whole, Const<8>)>::box_of([2, 50]), [2, 8]);
    }
}
