//! FNV-1a mixing, in `const fn`s: how a type's fingerprint (its extents', its element's, a
//! kernel parameter's) and a kernel's signature digest are computed, the same on the host and
//! on the GPU ([`kernel::signature`](crate::kernel::signature) gives the digest's meaning).

/// The FNV-1a offset basis: the digest of nothing.
pub const START: u64 = 0xcbf2_9ce4_8422_2325;

/// `hash` with `bytes` mixed in (FNV-1a).
const fn mix_bytes(hash: u64, bytes: &[u8]) -> u64 {
    let mut hash = hash;
    let mut i = 0;
    while i < bytes.len() {
        hash = (hash ^ bytes[i] as u64).wrapping_mul(0x0000_0100_0000_01b3);
        i += 1;
    }
    hash
}

/// `hash` with the eight little-endian bytes of `value` mixed in.
pub const fn mix(hash: u64, value: u64) -> u64 {
    mix_bytes(hash, &value.to_le_bytes())
}

/// `hash` with the bytes of `text` mixed in, then its length.
pub const fn mix_str(hash: u64, text: &str) -> u64 {
    mix(mix_bytes(hash, text.as_bytes()), text.len() as u64)
}
