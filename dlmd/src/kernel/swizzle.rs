//! The shared-memory swizzles of the bulk tensor copies (TMA) and the warpgroup products
//! (`wgmma`): a tile of rows `S::BYTES` long ([`Swizzle32`], [`Swizzle64`], [`Swizzle128`])
//! whose 16-byte pieces are permuted row by row, so that the 8 rows a warp reads at once
//! meet every bank of shared memory once.
//!
//! Row `r`'s piece `p` (its bytes `16 p .. 16 p + 16`) is stored at piece
//! `p ^ ((r / (128 / BYTES)) % (BYTES / 16))` of the same row. In byte terms, bits 4 and up of
//! the tile's byte offset are XORed with its bits 7 and up, as many bits as a row has pieces
//! (`offset ^ ((offset >> 3) & mask)`, CuTe's `Swizzle<log2(BYTES / 16), 4, 3>`). The pattern
//! repeats every `8 · BYTES` bytes, the alignment a swizzled tile's base needs
//! ([`Swizzle::ALIGN`]): the copy engine and `wgmma`
//! swizzle shared-memory *addresses*, so a tile that starts elsewhere is laid out differently.
//!
//! A cooperative kernel's tiles take the same swizzles as layouts
//! ([`RightSwizzled`](crate::kernel::block::RightSwizzled),
//! [`LeftSwizzled`](crate::kernel::block::LeftSwizzled)), filled by `cp.async` and read by
//! `ldmatrix`. The block's own code places their elements, so there the pattern is counted
//! from each column panel's first byte within the tile (128-aligned, as every tile of a block
//! is).

mod sealed {
    pub trait Sealed {}
}

/// A shared-memory swizzle of rows [`BYTES`](Self::BYTES) long: [`Swizzle32`], [`Swizzle64`]
/// or [`Swizzle128`].
pub trait Swizzle: sealed::Sealed + Copy + Default + core::fmt::Debug + 'static {
    /// The bytes of a row, and the most the innermost dimension of a copy's box may hold.
    const BYTES: usize;
    /// The alignment of a swizzled tile's first byte: the period of the pattern.
    const ALIGN: usize;
    /// The swizzle's code in a `wgmma` shared-memory matrix descriptor (bits 62–63).
    #[doc(hidden)]
    const DESCRIPTOR: u64;
    /// The swizzle's `CUtensorMapSwizzle` value.
    #[doc(hidden)]
    const TENSOR_MAP: u32;

    /// The byte offset, from the tile's first byte, of byte `byte` (`< BYTES`) of row `row`.
    #[inline(always)]
    fn offset(row: usize, byte: usize) -> usize {
        let linear = row * Self::BYTES + byte;
        // Bits 4.. of the offset inside the row, as many as the row has pieces, XORed with the
        // bits 7.. of the row's start.
        let mask = Self::BYTES - 16;
        linear ^ ((linear >> 3) & mask)
    }
}

/// Rows of 32 bytes, two pieces each, the second half of every 256 bytes swapped piece by piece.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Swizzle32;

/// Rows of 64 bytes, four pieces each, permuted by the row pair within every 512 bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Swizzle64;

/// Rows of 128 bytes, eight pieces each, permuted by the row within every 1024 bytes: row `r`'s
/// piece `p` at piece `p ^ (r % 8)`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Swizzle128;

impl sealed::Sealed for Swizzle32 {}
impl sealed::Sealed for Swizzle64 {}
impl sealed::Sealed for Swizzle128 {}

impl Swizzle for Swizzle32 {
    const BYTES: usize = 32;
    const ALIGN: usize = 256;
    const DESCRIPTOR: u64 = 3;
    const TENSOR_MAP: u32 = 1;
}

impl Swizzle for Swizzle64 {
    const BYTES: usize = 64;
    const ALIGN: usize = 512;
    const DESCRIPTOR: u64 = 2;
    const TENSOR_MAP: u32 = 2;
}

impl Swizzle for Swizzle128 {
    const BYTES: usize = 128;
    const ALIGN: usize = 1024;
    const DESCRIPTOR: u64 = 1;
    const TENSOR_MAP: u32 = 3;
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The swizzle as the CUDA programming guide draws it: the 16-byte piece `p` of row `r`
    /// goes to piece `p ^ ((r / (128 / BYTES)) % (BYTES / 16))` of its row.
    fn reference<S: Swizzle>(row: usize, byte: usize) -> usize {
        let pieces = S::BYTES / 16;
        let rows_per_line = 128 / S::BYTES;
        let piece = (byte / 16) ^ ((row / rows_per_line) % pieces);
        row * S::BYTES + piece * 16 + byte % 16
    }

    fn agrees<S: Swizzle>(row: usize, byte: usize) {
        assert_eq!(
            S::offset(row, byte),
            reference::<S>(row, byte),
            "row {row}, byte {byte}"
        );
    }

    /// Every byte of an `ALIGN`-byte period lands once inside the period, and rows stay rows.
    fn permutes<S: Swizzle>() {
        let rows = S::ALIGN / S::BYTES;
        let mut seen = [false; 1024];
        for row in 0..rows {
            for byte in 0..S::BYTES {
                let at = S::offset(row, byte);
                assert!(at < S::ALIGN);
                assert_eq!(at / S::BYTES, row, "a byte leaves its row");
                assert_eq!(at % 16, byte % 16, "a piece is moved whole");
                assert!(!seen[at], "two bytes at {at}");
                seen[at] = true;
            }
        }
        // The pattern repeats: the next period is this one moved by `ALIGN`.
        for row in 0..rows {
            for byte in 0..S::BYTES {
                assert_eq!(S::offset(row + rows, byte), S::offset(row, byte) + S::ALIGN);
            }
        }
    }

    #[test]
    fn each_swizzle_permutes_its_period() {
        permutes::<Swizzle32>();
        permutes::<Swizzle64>();
        permutes::<Swizzle128>();
    }

    #[test]
    fn the_128_byte_swizzle_moves_piece_p_of_row_r_to_p_xor_r() {
        for row in 0..16 {
            for piece in 0..8 {
                assert_eq!(
                    Swizzle128::offset(row, 16 * piece),
                    128 * row + 16 * (piece ^ (row % 8))
                );
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: if cfg!(miri) { 16 } else { 2048 },
            // Miri's isolation has no working directory for the regression file.
            failure_persistence: if cfg!(miri) { None } else { ProptestConfig::default().failure_persistence },
            ..ProptestConfig::default()
        })]

        #[test]
        fn offsets_agree_with_the_reference(row in 0usize..4096, byte in 0usize..128) {
            agrees::<Swizzle32>(row, byte % 32);
            agrees::<Swizzle64>(row, byte % 64);
            agrees::<Swizzle128>(row, byte);
        }
    }
}
