//! `wgmma`'s shared-memory matrix descriptors of tiles in the 128-byte swizzle, as numbers:
//! [`raw::descriptor_128`](super::raw::descriptor_128) (K-major) and
//! [`raw::descriptor_128_mn`](super::raw::descriptor_128_mn) (MN-major) document the fields.

/// The start address's field: bits 0–13, the shared-state-space address `>> 4` (addresses
/// below 256 KiB).
const fn start(address: u32) -> u64 {
    (address as u64 & 0x3_ffff) >> 4
}

/// The 128-byte swizzle's mode, bits 62–63.
const SWIZZLE_128: u64 = 1 << 62;

/// The stride byte offset of 1024 bytes (`>> 4`, bits 32–45): from one 8-row atom of 128-byte
/// rows to the next.
const ATOM_STRIDE: u64 = 64 << 32;

/// K-major: rows of 128 bytes along `m` or `n`, atoms 1024 bytes apart; the leading byte offset
/// unused (1).
pub(crate) const fn k_major_128(address: u32) -> u64 {
    start(address) | (1 << 16) | ATOM_STRIDE | SWIZZLE_128
}

/// MN-major: rows of 128 bytes (64 elements of `m` or `n`) along `k`, 8-row atoms 1024 bytes
/// apart along `k`, and column panels of 64 elements `panel_bytes` apart along `m` or `n` (the
/// leading byte offset, `>> 4`, bits 16–29: below 256 KiB).
pub(crate) const fn mn_major_128(address: u32, panel_bytes: u32) -> u64 {
    start(address) | (((panel_bytes as u64 >> 4) & 0x3fff) << 16) | ATOM_STRIDE | SWIZZLE_128
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fields of a descriptor: start, leading byte offset, stride byte offset, base offset,
    /// swizzle mode.
    fn fields(d: u64) -> [u64; 5] {
        [
            d & 0x3fff,
            (d >> 16) & 0x3fff,
            (d >> 32) & 0x3fff,
            (d >> 49) & 7,
            d >> 62,
        ]
    }

    #[test]
    fn descriptors_hold_their_fields_where_the_isa_puts_them() {
        assert_eq!(fields(k_major_128(0x1_0400)), [0x1040, 1, 64, 0, 1]);
        // A `64 × 256` `bf16` `k × n` tile: four panels of 64 rows of 128 bytes.
        assert_eq!(fields(mn_major_128(0x2_0000, 64 * 128)), [0x2000, 512, 64, 0, 1]);
        // Nothing else is set: bits 14–15, 30–31, 46–48 and 52–61 stay clear.
        let reserved = (3 << 14) | (3 << 30) | (7 << 46) | (0x3ff << 52);
        for d in [k_major_128(u32::MAX), mn_major_128(u32::MAX, u32::MAX)] {
            assert_eq!(d & reserved, 0, "{d:#x}");
        }
    }

    #[test]
    fn a_step_along_k_moves_only_the_start_field() {
        // `wgmma` steps `A` (and a K-major `B`) by 32 bytes, an MN-major `B` by 2048 (two
        // atoms): the descriptor's low bits, without a carry into the next field while the
        // tile is below 256 KiB.
        for base in (0..0x3_8000u32).step_by(1024) {
            for s in 0..4u64 {
                assert_eq!(k_major_128(base) + 2 * s, k_major_128(base + 32 * s as u32));
                assert_eq!(
                    mn_major_128(base, 8192) + 128 * s,
                    mn_major_128(base + 2048 * s as u32, 8192)
                );
            }
        }
    }
}
