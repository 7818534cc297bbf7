//! What each argument of a launch reaches, and the check that no argument a kernel writes
//! shares memory with another argument.
//!
//! A kernel's threads write a [`Unique`](crate::view::Unique) view through a partition that
//! hands each element to exactly one thread ([`Thread::for_each_mut`](super::Thread)), and read
//! a [`Shared`](crate::view::Shared) view from any thread. Both rest on the same promise: while
//! the kernel runs, nothing else writes the memory of a view it reads, and nothing else reads or
//! writes the memory of a view it writes. Inside one launch "nothing else" includes the
//! launch's other arguments. Views that Rust owns keep that promise by borrowing (one `&mut`
//! or many `&`); views imported from another framework cannot, because two tensors handed to
//! Rust may be the same memory. So every launch runs [`check_disjoint`] over its arguments'
//! [`Footprint`]s before anything is queued.
//!
//! # Why the check makes the launch sound
//!
//! The check refuses a launch where an argument the kernel writes ([`Use::Write`]) shares a
//! byte of its span with any other argument, where an argument updated atomically
//! ([`Use::Atomic`]) shares one with an argument read or written plainly, and where two atomic
//! arguments share one without their elements coinciding: both must be of one element type,
//! and their spans must start the same number of bytes past a multiple of the element's size.
//! What remains:
//!
//! - every written argument's span is disjoint from every other argument's span, and an
//!   element lies inside its view's span (a mapping's invariant), so no element of a written
//!   view is reached through another argument;
//! - a written view's layout maps no two indices to one element (a mutable view is made only
//!   over a mapping that passes [`Mapping::is_unique`](crate::Mapping::is_unique), by its
//!   importer or by Rust's borrowing), so the partition gives each element to one thread;
//! - arguments that overlap are all read ([`Use::Read`]: no thread writes them) or all
//!   updated atomically as one element type: each view's elements lie a whole number of
//!   elements past its span's start, so where two such spans meet, an element of one is
//!   either an element of the other, byte for byte, or shares no byte with it. Every access to
//!   a shared byte is then an atomic of the same type, width and address.
//!
//! So within the launch no thread reads an element another thread writes plainly, no two
//! threads write one plainly, and no atomic overlaps part of another atomic's element (which
//! PTX's memory model leaves undefined, as it does an atomic on one type racing one on
//! another). Work outside the launch is ordered by streams, not by this check.
//!
//! The check compares spans, the bytes from the first element a view reaches to its last: two
//! views that interleave without sharing an element (the even and odd columns of one matrix)
//! overlap by span and are refused. It errs on the side of refusing.

use crate::dlpack::DLDataType;
use crate::dtype::DlElement;

/// How a kernel uses an argument's memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Use {
    /// Read by any thread, written by none.
    Read,
    /// Written (and read) plainly, each element by one thread.
    Write,
    /// Updated by atomic operations from any thread, one element of type `dtype` (`size`
    /// bytes) at a time.
    Atomic {
        /// The element type the atomics operate on.
        dtype: DLDataType,
        /// The element's size in bytes: each atomic reaches this many bytes.
        size: usize,
    },
}

impl Use {
    /// The use of a view updated atomically whose elements are `T`.
    #[inline]
    pub const fn atomic<T: DlElement>() -> Use {
        Use::Atomic {
            dtype: T::DTYPE,
            size: size_of::<T>(),
        }
    }
}

/// The memory one argument of a launch reaches: `bytes` bytes from address `start`, and how the
/// kernel uses them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Footprint {
    /// The address of the span's first byte.
    pub start: usize,
    /// The span's length in bytes; 0 reaches nothing.
    pub bytes: usize,
    /// How the kernel uses the span.
    pub used: Use,
}

impl Footprint {
    /// The span as a half-open range of addresses, widened so that a span running past the
    /// end of the address space ends there instead of wrapping.
    #[inline]
    fn range(&self) -> (u128, u128) {
        let start = self.start as u128;
        (start, start + self.bytes as u128)
    }

    /// Whether two arguments of one launch may share memory: both read, or both updated
    /// atomically as one element type with their elements at the same offsets modulo the
    /// element's size, so that elements that meet coincide exactly (see the
    /// [module docs](self)).
    #[inline]
    pub fn may_share_with(&self, other: &Footprint) -> bool {
        match (self.used, other.used) {
            (Use::Read, Use::Read) => true,
            (
                Use::Atomic { dtype, size },
                Use::Atomic {
                    dtype: other_dtype,
                    size: other_size,
                },
            ) => {
                dtype == other_dtype
                    && size == other_size
                    && size != 0
                    && self.start.abs_diff(other.start).is_multiple_of(size)
            }
            _ => false,
        }
    }

    /// Whether the two spans share a byte (empty spans share none).
    #[inline]
    pub fn overlaps(&self, other: &Footprint) -> bool {
        let (a, b) = self.range();
        let (c, d) = other.range();
        a < b && c < d && a < d && c < b
    }
}

/// Two arguments of a launch that share memory where one of them must not.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "argument {first} ({first_use}) and argument {second} ({second_use}) share memory: a kernel may not write \
     memory that another of its arguments reaches, nor update it atomically as another element type or at other \
     element boundaries; pass separate tensors (or copy one first)",
    first_use = UseName(*first_use),
    second_use = UseName(*second_use)
)]
pub struct Overlap {
    /// The position of the first argument among the kernel's parameters (0-based).
    pub first: usize,
    /// How the kernel uses it.
    pub first_use: Use,
    /// The position of the second argument, after the first.
    pub second: usize,
    /// How the kernel uses it.
    pub second_use: Use,
}

struct UseName(Use);

impl core::fmt::Display for UseName {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self.0 {
            Use::Read => f.write_str("read"),
            Use::Write => f.write_str("written"),
            Use::Atomic { dtype, .. } => write!(f, "updated atomically as {dtype}"),
        }
    }
}

/// Checks that no two footprints share memory unless both are read or both are updated
/// atomically as one element type, element on element (see the [module docs](self)); `None` entries (scalars) reach no memory. Of the
/// pairs that fail, the one with the smallest `first`, then the smallest `second`, is reported.
///
/// Pairwise: a launch has a handful of arguments, and this costs a few comparisons each.
pub fn check_disjoint(footprints: &[Option<Footprint>]) -> Result<(), Overlap> {
    for (i, a) in footprints.iter().enumerate() {
        let Some(a) = a else { continue };
        for (j, b) in footprints.iter().enumerate().skip(i + 1) {
            let Some(b) = b else { continue };
            if !a.may_share_with(b) && a.overlaps(b) {
                return Err(Overlap {
                    first: i,
                    first_use: a.used,
                    second: j,
                    second_use: b.used,
                });
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn at(start: usize, bytes: usize, used: Use) -> Option<Footprint> {
        Some(Footprint { start, bytes, used })
    }

    const F32: Use = Use::atomic::<f32>();
    const U32: Use = Use::atomic::<u32>();
    const F64: Use = Use::atomic::<f64>();
    const U64: Use = Use::atomic::<u64>();

    #[test]
    fn atomics_share_memory_only_element_on_element() {
        // One element type, elements at the same offsets modulo its size: shifted by whole
        // elements, or one span inside the other.
        assert_eq!(check_disjoint(&[at(64, 64, F32), at(96, 64, F32)]), Ok(()));
        assert_eq!(check_disjoint(&[at(0, 64, U64), at(8, 8, U64)]), Ok(()));
        // Two widths over the same bytes: a 64-bit atomic reaches half of another's element.
        let refused = Err(Overlap {
            first: 0,
            first_use: U32,
            second: 1,
            second_use: U64,
        });
        assert_eq!(check_disjoint(&[at(64, 64, U32), at(64, 64, U64)]), refused);
        assert!(check_disjoint(&[at(64, 8, F64), at(68, 4, F32)]).is_err());
        // One width, but elements that straddle each other's boundaries.
        assert!(check_disjoint(&[at(64, 64, U64), at(68, 64, U64)]).is_err());
        assert!(check_disjoint(&[at(64, 16, F32), at(66, 16, F32)]).is_err());
        // One width, two element types: an integer and a float update of one word.
        assert!(check_disjoint(&[at(64, 64, F32), at(64, 64, U32)]).is_err());
        // Apart, any atomics may meet at a boundary.
        assert_eq!(check_disjoint(&[at(64, 4, U32), at(68, 8, U64)]), Ok(()));
        let message = check_disjoint(&[at(0, 8, U32), at(0, 8, F64)]).unwrap_err().to_string();
        assert!(
            message.starts_with(
                "argument 0 (updated atomically as uint32) and argument 1 (updated atomically as float64) share memory"
            ),
            "{message}"
        );
    }

    #[test]
    fn a_written_argument_shares_no_byte() {
        use Use::*;
        // Adjacent spans share no byte.
        assert_eq!(check_disjoint(&[at(0, 16, Write), at(16, 16, Read)]), Ok(()));
        // One byte in common is enough.
        assert_eq!(
            check_disjoint(&[at(0, 16, Read), at(15, 16, Write)]),
            Err(Overlap {
                first: 0,
                first_use: Read,
                second: 1,
                second_use: Write
            })
        );
        // The same tensor twice, written once.
        assert!(check_disjoint(&[at(64, 64, Write), None, at(64, 64, Read)]).is_err());
        // Read twice, or added to atomically twice: fine.
        assert_eq!(check_disjoint(&[at(64, 64, Read), at(64, 64, Read)]), Ok(()));
        assert_eq!(check_disjoint(&[at(64, 64, F32), at(64, 64, F32)]), Ok(()));
        // Atomic updates under plain reads or writes: refused.
        assert!(check_disjoint(&[at(64, 64, F32), at(100, 4, Read)]).is_err());
        assert!(check_disjoint(&[at(64, 64, Write), at(100, 4, F32)]).is_err());
        // A span inside another.
        assert!(check_disjoint(&[at(0, 1024, Read), at(512, 4, Write)]).is_err());
        // Empty spans reach nothing, even at the same address.
        assert_eq!(check_disjoint(&[at(64, 0, Write), at(64, 64, Read)]), Ok(()));
        assert_eq!(check_disjoint(&[at(64, 64, Write), at(80, 0, Read)]), Ok(()));
        // Scalars reach nothing.
        assert_eq!(check_disjoint(&[None, None]), Ok(()));
        assert_eq!(check_disjoint(&[]), Ok(()));
    }

    #[test]
    fn spans_at_the_end_of_the_address_space_do_not_wrap() {
        use Use::*;
        let top = usize::MAX - 7;
        assert!(check_disjoint(&[at(top, usize::MAX, Write), at(usize::MAX, 1, Read)]).is_err());
        // A span that would wrap past the end does not reach address 0.
        assert_eq!(check_disjoint(&[at(top, 16, Write), at(0, 8, Read)]), Ok(()));
    }

    #[test]
    fn the_first_failing_pair_is_reported() {
        use Use::*;
        let found = check_disjoint(&[at(0, 8, Read), at(100, 8, Write), at(0, 4, Write), at(104, 1, Read)]);
        assert_eq!(
            found.map_err(|e| (e.first, e.second)),
            Err((0, 2)),
            "argument 0 against 2 before 1 against 3"
        );
        let message = check_disjoint(&[at(0, 8, Write), at(4, 8, Read)])
            .unwrap_err()
            .to_string();
        assert!(
            message.starts_with("argument 0 (written) and argument 1 (read) share memory"),
            "{message}"
        );
    }

    fn arb_use() -> impl Strategy<Value = Use> {
        prop_oneof![
            Just(Use::Read),
            Just(Use::Write),
            Just(F32),
            Just(U32),
            Just(F64),
            Just(U64)
        ]
    }

    fn arb_footprints() -> impl Strategy<Value = Vec<Option<Footprint>>> {
        // Small addresses, so that spans meet often; and a few near the top of the space.
        let base = prop_oneof![4 => 0usize..64, 1 => (usize::MAX - 64)..=usize::MAX];
        // An atomic view's span is whole elements.
        let footprint = (base, 0usize..24, arb_use()).prop_map(|(start, bytes, used)| match used {
            Use::Atomic { size, .. } => Footprint {
                start,
                bytes: bytes / size * size,
                used,
            },
            _ => Footprint { start, bytes, used },
        });
        proptest::collection::vec(proptest::option::weighted(0.9, footprint), 0..6)
    }

    /// The byte ranges a footprint's accesses reach (the model the check is held to): one
    /// element at a time for atomics, one byte at a time otherwise.
    fn accesses(f: &Footprint) -> Vec<(u128, u128)> {
        let width = match f.used {
            Use::Atomic { size, .. } => size,
            _ => 1,
        };
        let start = f.start as u128;
        (0..f.bytes / width)
            .map(|k| {
                let low = start + (k * width) as u128;
                (low, low + width as u128)
            })
            .collect()
    }

    /// Whether two arguments conflict in the model: a byte reached by both, unless both are
    /// read, or both are atomics of one element type whose elements that meet are the same.
    fn conflict(a: &Footprint, b: &Footprint) -> bool {
        let (x, y) = (accesses(a), accesses(b));
        let meeting = || {
            x.iter()
                .flat_map(|p| y.iter().map(move |q| (p, q)))
                .filter(|(p, q)| p.0 < q.1 && q.0 < p.1)
        };
        match (a.used, b.used) {
            (Use::Read, Use::Read) => false,
            (Use::Atomic { dtype: s, .. }, Use::Atomic { dtype: t, .. }) if s == t => meeting().any(|(p, q)| p != q),
            _ => meeting().next().is_some(),
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: 2048,
            // Miri's isolation has no working directory for the regression file (with
            // `--include-ignored`).
            failure_persistence: if cfg!(miri) { None } else { ProptestConfig::default().failure_persistence },
            ..ProptestConfig::default()
        })]

        /// The check agrees with a byte-by-byte model: it fails exactly when two arguments
        /// that may not share memory reach a common byte (atomics of one type: a common byte
        /// of two different elements), and names the first such pair.
        #[test]
        #[cfg_attr(miri, ignore = "safe arithmetic or parsing alone: run natively")]
        fn agrees_with_a_byte_model(footprints in arb_footprints()) {
            let mut expected = None;
            'pairs: for (i, a) in footprints.iter().enumerate() {
                let Some(a) = a else { continue };
                for (j, b) in footprints.iter().enumerate().skip(i + 1) {
                    let Some(b) = b else { continue };
                    if conflict(a, b) {
                        expected = Some((i, j));
                        break 'pairs;
                    }
                }
            }
            let found = check_disjoint(&footprints).err().map(|e| (e.first, e.second));
            prop_assert_eq!(found, expected);
        }

        /// The order of the arguments changes which pair is named, never whether one is.
        #[test]
        #[cfg_attr(miri, ignore = "safe arithmetic or parsing alone: run natively")]
        fn order_does_not_matter(mut footprints in arb_footprints()) {
            let forward = check_disjoint(&footprints).is_ok();
            footprints.reverse();
            prop_assert_eq!(check_disjoint(&footprints).is_ok(), forward);
        }
    }
}
