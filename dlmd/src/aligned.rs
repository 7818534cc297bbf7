//! Neighbouring elements as one value aligned to their size, which the compiler moves with one
//! vector load or store: what a kernel's fours of a view (`kernel::vector`), a view's runs
//! (`Mdspan::get_run`) and a tile's runs are read and written as.

macro_rules! aligned {
    ($($name:ident $align:literal),*) => {$(
        #[doc = concat!("`K` elements aligned to ", stringify!($align), " bytes.")]
        #[repr(C, align($align))]
        #[derive(Clone, Copy)]
        // Views' fours of 4 bytes are read this way in kernels only.
        #[cfg_attr(not(target_arch = "nvptx64"), allow(dead_code))]
        pub(crate) struct $name<T, const K: usize>(pub(crate) [T; K]);
    )*};
}
aligned!(Align4 4, Align8 8, Align16 16, Align128 128);

/// The `K` readable elements `stride` apart from `first`: one vector load where they are
/// neighbours and `first` is aligned to their size (8 or 16 bytes), `K` loads otherwise.
///
/// # Safety
///
/// The `K` elements are readable, and nothing writes them meanwhile.
#[inline(always)]
pub(crate) unsafe fn read_run<T: Copy, const K: usize>(first: *const T, stride: isize) -> [T; K] {
    if stride == 1 && (first as usize).is_multiple_of(K * size_of::<T>()) {
        // SAFETY: `K` neighbouring readable elements from `first` (caller), aligned to their
        // size (checked).
        return unsafe { read_aligned_run(first) };
    }
    // SAFETY: `K` readable elements one stride apart (caller).
    core::array::from_fn(|k| unsafe { first.wrapping_offset(k as isize * stride).read() })
}

/// The `K` neighbouring readable elements from `first`: one vector load where they are 8 or
/// 16 bytes, `K` loads otherwise.
///
/// # Safety
///
/// The `K` elements are readable, nothing writes them meanwhile, and `first` is aligned to
/// `K` elements' size where that is 8 or 16 bytes.
#[inline(always)]
pub(crate) unsafe fn read_aligned_run<T: Copy, const K: usize>(first: *const T) -> [T; K] {
    match K * size_of::<T>() {
        // SAFETY: `K` neighbouring readable elements from `first`, aligned to their size
        // (caller), which is the vector's.
        16 => unsafe { first.cast::<Align16<T, K>>().read().0 },
        // SAFETY: as above.
        8 => unsafe { first.cast::<Align8<T, K>>().read().0 },
        // SAFETY: `K` neighbouring readable elements (caller).
        _ => core::array::from_fn(|k| unsafe { first.wrapping_add(k).read() }),
    }
}

/// Writes `values` to the `K` neighbouring elements from `first`: one vector store where
/// they are 4 (two or more elements), 8 or 16 bytes, `K` stores otherwise.
///
/// # Safety
///
/// The `K` elements are writable, nothing else reads or writes them meanwhile, and `first` is
/// aligned to `K` elements' size where that is 4 (with `K > 1`), 8 or 16 bytes.
#[cfg_attr(not(target_arch = "nvptx64"), allow(dead_code))]
#[inline(always)]
pub(crate) unsafe fn write_aligned_run<T: Copy, const K: usize>(first: *mut T, values: [T; K]) {
    match K * size_of::<T>() {
        // SAFETY: `K` neighbouring writable elements from `first`, aligned to their size
        // (caller), which is the vector's.
        16 => unsafe { first.cast::<Align16<T, K>>().write(Align16(values)) },
        // SAFETY: as above.
        8 => unsafe { first.cast::<Align8<T, K>>().write(Align8(values)) },
        // SAFETY: as above.
        4 if K > 1 => unsafe { first.cast::<Align4<T, K>>().write(Align4(values)) },
        // SAFETY: `K` neighbouring writable elements (caller).
        _ => unsafe { write_each(first, 1, values) },
    }
}

/// One non-coherent vector load of `$n` 32-bit words (`v2` or `v4`) from the global memory
/// at `$p`, with the cache hint `$hint` (`""`, or `"cs."` for a line read once).
#[cfg(target_arch = "nvptx64")]
macro_rules! load_global {
    ($p:expr, $hint:literal, v4) => {{
        let (a, b, c, d): (u32, u32, u32, u32);
        core::arch::asm!(
            concat!("{{ .reg .b64 g; cvta.to.global.u64 g, {p}; ld.global.", $hint, "nc.v4.b32 {{{a}, {b}, {c}, {d}}}, [g]; }}"),
            p = in(reg64) $p,
            a = out(reg32) a,
            b = out(reg32) b,
            c = out(reg32) c,
            d = out(reg32) d,
            options(pure, readonly, nostack),
        );
        [a, b, c, d]
    }};
    ($p:expr, $hint:literal, v2) => {{
        let (a, b): (u32, u32);
        core::arch::asm!(
            concat!("{{ .reg .b64 g; cvta.to.global.u64 g, {p}; ld.global.", $hint, "nc.v2.b32 {{{a}, {b}}}, [g]; }}"),
            p = in(reg64) $p,
            a = out(reg32) a,
            b = out(reg32) b,
            options(pure, readonly, nostack),
        );
        [a, b]
    }};
}

/// The sixteen bytes at `p` as one non-coherent vector load (`ld.global.nc.v4`), which the
/// compiler would otherwise split into one load a word where the words are used one by one;
/// with `STREAMING`, the line is evicted first (`.cs`: data each thread reads once).
///
/// # Safety
///
/// `p` is 16-aligned global memory (device or managed) that nothing writes while the kernel
/// runs, as the non-coherent path asks.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub(crate) unsafe fn load_global_v4<const STREAMING: bool>(p: *const u8) -> [u32; 4] {
    if STREAMING {
        // SAFETY: sixteen readable bytes at `p`, aligned, not written meanwhile (caller).
        unsafe { load_global!(p, "cs.", v4) }
    } else {
        // SAFETY: as above.
        unsafe { load_global!(p, "", v4) }
    }
}

/// [`read_run`] from the GPU's global memory in a kernel: where the `K` elements are
/// neighbours, 8 or 16 bytes in all, and `first` is aligned to their size, one non-coherent
/// vector load (`ld.global.nc.v2`/`.v4`). Elsewhere, [`read_run`].
///
/// # Safety
///
/// As for [`read_run`], and the elements are in global memory (device or managed) that nothing
/// writes while the kernel runs, as the non-coherent path asks.
#[inline(always)]
pub(crate) unsafe fn read_global_run<T: Copy, const K: usize>(first: *const T, stride: isize) -> [T; K] {
    if stride == 1 && (first as usize).is_multiple_of(K * size_of::<T>()) {
        // SAFETY: `K` neighbouring elements (stride 1), aligned to their size (checked), in
        // global memory that nothing writes while the kernel runs (caller).
        return unsafe { read_global_aligned_run(first) };
    }
    // SAFETY: as this function's contract.
    unsafe { read_run(first, stride) }
}

/// [`read_global_run`] of `K` neighbours whose alignment the caller has proved some other way
/// (a view's start and strides, tested once for all its runs): no test of the address.
///
/// # Safety
///
/// `K` neighbouring readable elements from `first`, which is aligned to their size
/// (`K × size_of::<T>()` bytes), in global memory (device or managed) that nothing writes
/// while the kernel runs.
#[inline(always)]
pub(crate) unsafe fn read_global_aligned_run<T: Copy, const K: usize>(first: *const T) -> [T; K] {
    #[cfg(target_arch = "nvptx64")]
    match K * size_of::<T>() {
        16 => {
            // SAFETY: sixteen readable bytes at `first`, 16-aligned, in global memory that
            // nothing writes while the kernel runs (caller).
            let words = unsafe { load_global_v4::<false>(first.cast()) };
            // SAFETY: `[T; K]` is these 16 bytes (this arm), as stored; `T` is `Copy`.
            return unsafe { core::mem::transmute_copy::<[u32; 4], [T; K]>(&words) };
        }
        8 => {
            // SAFETY: eight readable bytes at `first`, 8-aligned, in global memory that nothing
            // writes while the kernel runs (caller).
            let words = unsafe { load_global!(first, "", v2) };
            // SAFETY: `[T; K]` is these 8 bytes (this arm), as stored; `T` is `Copy`.
            return unsafe { core::mem::transmute_copy::<[u32; 2], [T; K]>(&words) };
        }
        _ => {}
    }
    // SAFETY: `K` neighbouring readable elements from `first`, aligned to their size (caller).
    unsafe { read_aligned_run(first) }
}

/// [`write_run`] to the GPU's global memory in a kernel: where the `K` elements are
/// neighbours, 16 bytes in all, and `first` is aligned to their size, one vector store to the
/// global space (`st.global.v4`, where a generic store would leave the space to the hardware to
/// resolve). Elsewhere, [`write_run`].
///
/// # Safety
///
/// As for [`write_run`], and the elements are in global memory (device or managed).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub(crate) unsafe fn write_global_run<T: Copy, const K: usize>(first: *mut T, stride: isize, values: [T; K]) {
    if K * size_of::<T>() == 16 && stride == 1 && (first as usize).is_multiple_of(16) {
        // SAFETY: `[T; K]` is 16 bytes (checked), `Copy`; its bytes as four words.
        let [a, b, c, d] = unsafe { core::mem::transmute_copy::<[T; K], [u32; 4]>(&values) };
        // SAFETY: sixteen writable bytes at `first`, 16-aligned (checked), in global memory
        // that nothing else reads or writes meanwhile (caller).
        unsafe {
            core::arch::asm!(
                "{{ .reg .b64 g; cvta.to.global.u64 g, {p}; st.global.v4.b32 [g], {{{a}, {b}, {c}, {d}}}; }}",
                p = in(reg64) first,
                a = in(reg32) a,
                b = in(reg32) b,
                c = in(reg32) c,
                d = in(reg32) d,
                options(nostack),
            )
        };
        return;
    }
    // SAFETY: as this function's contract.
    unsafe { write_run(first, stride, values) }
}

/// Writes `values` to the `K` elements `stride` apart from `first`: one vector store where they
/// are neighbours and `first` is aligned to their size (8 or 16 bytes), `K` stores otherwise.
///
/// # Safety
///
/// The `K` elements are writable, and nothing else reads or writes them meanwhile.
#[cfg_attr(not(target_arch = "nvptx64"), allow(dead_code))]
#[inline(always)]
pub(crate) unsafe fn write_run<T: Copy, const K: usize>(first: *mut T, stride: isize, values: [T; K]) {
    if stride == 1 && (first as usize).is_multiple_of(K * size_of::<T>()) {
        // SAFETY: `K` neighbouring writable elements from `first` (caller), aligned to their
        // size (checked).
        return unsafe { write_aligned_run(first, values) };
    }
    // SAFETY: as this function's contract.
    unsafe { write_each(first, stride, values) }
}

/// Writes `values` to the `K` elements `stride` apart from `first`, one store each.
///
/// # Safety
///
/// As for [`write_run`].
#[cfg_attr(not(target_arch = "nvptx64"), allow(dead_code))]
#[inline(always)]
pub(crate) unsafe fn write_each<T: Copy, const K: usize>(first: *mut T, stride: isize, values: [T; K]) {
    // Indexed, not iterated: the loop over a constant count unrolls, and the values stay in
    // registers (an array iterator can leave them in local memory).
    #[allow(clippy::needless_range_loop)]
    for k in 0..K {
        // SAFETY: `K` writable elements one stride apart (caller).
        unsafe { first.wrapping_offset(k as isize * stride).write(values[k]) };
    }
}

#[cfg(test)]
mod tests {
    use super::{Align16, read_global_aligned_run, read_global_run, read_run, write_run};

    /// Twelve `f32` from a 16-aligned start, each its own index.
    fn numbered() -> Align16<f32, 12> {
        Align16(core::array::from_fn(|k| k as f32))
    }

    /// [`read_run`] of `K` elements `stride` apart from element `at` of `data`.
    fn read<const K: usize>(data: &Align16<f32, 12>, at: usize, stride: isize) -> [f32; K] {
        let reach = at as isize + (K as isize - 1) * stride;
        assert!(at < 12 && (0..12).contains(&reach));
        // SAFETY: the run's first and last elements are inside `data` (checked), so all of
        // them are, and nothing writes `data` while it is borrowed.
        unsafe { read_run(data.0.as_ptr().wrapping_add(at), stride) }
    }

    /// [`write_run`] of `values` to the elements `stride` apart from element `at` of `data`.
    fn write<const K: usize>(data: &mut Align16<f32, 12>, at: usize, stride: isize, values: [f32; K]) {
        let reach = at as isize + (K as isize - 1) * stride;
        assert!(at < 12 && (0..12).contains(&reach));
        // SAFETY: the run's first and last elements are inside `data` (checked), so all of
        // them are, reached only through this borrow.
        unsafe { write_run(data.0.as_mut_ptr().wrapping_add(at), stride, values) }
    }

    #[test]
    fn runs_read_the_same_elements_by_vector_or_one_by_one() {
        let data = numbered();
        // 16 bytes from a 16-aligned start, and from one that is not (element by element).
        assert_eq!(read::<4>(&data, 0, 1), [0.0, 1.0, 2.0, 3.0]);
        assert_eq!(read::<4>(&data, 1, 1), [1.0, 2.0, 3.0, 4.0]);
        // 8 bytes, 8-aligned; 12 bytes from a multiple of 12, which no vector moves.
        assert_eq!(read::<2>(&data, 6, 1), [6.0, 7.0]);
        assert_eq!(read::<3>(&data, 0, 1), [0.0, 1.0, 2.0]);
        // A stride, and a negative one.
        assert_eq!(read::<4>(&data, 1, 3), [1.0, 4.0, 7.0, 10.0]);
        assert_eq!(read::<4>(&data, 11, -2), [11.0, 9.0, 7.0, 5.0]);
    }

    #[test]
    fn global_runs_read_as_the_plain_ones_do() {
        let data = numbered();
        for (at, stride) in [(0, 1), (1, 1), (4, 1), (2, 3), (11, -3)] {
            let reach = at as isize + 3 * stride;
            assert!((0..12).contains(&reach));
            // SAFETY: the run's first and last elements are inside `data` (asserted), so all of
            // them are, and nothing writes `data` while it is borrowed.
            let global: [f32; 4] = unsafe { read_global_run(data.0.as_ptr().wrapping_add(at), stride) };
            assert_eq!(global, read::<4>(&data, at, stride), "from {at}, stride {stride}");
        }
        for at in [0, 4, 8] {
            // SAFETY: four neighbours inside `data` from a multiple of four elements of its
            // 16-aligned start: 16-aligned themselves.
            let run: [f32; 4] = unsafe { read_global_aligned_run(data.0.as_ptr().wrapping_add(at)) };
            assert_eq!(run, core::array::from_fn(|k| (at + k) as f32));
        }
        // Two neighbours, 8-aligned.
        // SAFETY: elements 6 and 7 of `data`, 8 bytes from a multiple of 8.
        let pair: [f32; 2] = unsafe { read_global_aligned_run(data.0.as_ptr().wrapping_add(6)) };
        assert_eq!(pair, [6.0, 7.0]);
    }

    #[test]
    fn runs_write_the_same_elements_by_vector_or_one_by_one() {
        let mut data = numbered();
        write(&mut data, 0, 1, [20.0, 21.0, 22.0, 23.0]);
        write(&mut data, 6, 1, [26.0, 27.0]);
        // 12 bytes from a multiple of 12: no vector, one store each.
        write(&mut data, 9, 1, [29.0, 30.0, 31.0]);
        write(&mut data, 5, -1, [35.0, 34.0]);
        assert_eq!(
            data.0,
            [20.0, 21.0, 22.0, 23.0, 34.0, 35.0, 26.0, 27.0, 8.0, 29.0, 30.0, 31.0]
        );
        let mut data = numbered();
        write(&mut data, 1, 3, [-1.0, -4.0, -7.0, -10.0]);
        assert_eq!(
            data.0,
            [0.0, -1.0, 2.0, 3.0, -4.0, 5.0, 6.0, -7.0, 8.0, 9.0, -10.0, 11.0]
        );
    }
}
