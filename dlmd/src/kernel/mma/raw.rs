//! The instructions under [`mma`](super): `ldmatrix`, `mma.sync` and `cp.async`, one `unsafe`
//! function each, for kernels that lay out their own shared memory (the raw twins of the safe
//! kernels use them). Each function's contract is the instruction's, as the PTX ISA states it.
//!
//! Every function here is for the GPU: they exist only in a kernel crate's build for
//! `nvptx64`.
//!
//! `ldmatrix` and `mma.sync` are warp-collective (`.sync.aligned`): every lane of the warp must
//! run the same instruction together. LLVM knows its NVPTX intrinsics as convergent and moves
//! none of them into code that only some lanes run, but it knows no `asm!` block as
//! convergent (rustc marks none), and sinks a side-effect-free one (`pure`) into the branch
//! where its result is used, which may be taken by some lanes only. These blocks are therefore
//! declared with side effects: LLVM neither sinks, hoists nor removes such a block. LLVM's
//! `ldmatrix` intrinsic takes a shared-space pointer, which Rust cannot name, and its `mma`
//! intrinsics for `f16` take `<2 x half>` vectors; the intrinsics will replace these blocks
//! when Rust can call them. `ldmatrix` needs `sm_75`, `mma.sync` on `f16`/`bf16` and `cp.async` `sm_80`
//! (`dlmd_build::PtxBuild::arch`).

use core::arch::asm;

/// The address of `ptr`, a generic pointer into the block's shared memory, in the shared state
/// space (what `ldmatrix` and `cp.async` take): `__cvta_generic_to_shared`.
///
/// # Safety
///
/// `ptr` points into the running block's shared memory.
#[inline(always)]
pub unsafe fn shared_address<T>(ptr: *const T) -> u32 {
    let address: u32;
    // SAFETY: an address conversion of a shared-memory pointer (caller); reads nothing.
    unsafe {
        asm!(
            "{{ .reg .b64 s; cvta.to.shared.u64 s, {p}; cvt.u32.u64 {a}, s; }}",
            // The address as a number: the block reads no memory through it.
            p = in(reg64) ptr as usize as u64,
            a = out(reg32) address,
            options(pure, nomem, nostack),
        )
    };
    address
}

/// `ldmatrix.sync.aligned.m8n8.x4.shared.b16`: four 8 × 8 matrices of 16-bit elements, whose
/// rows the warp's lanes address (lane `8q + r` gives row `r` of matrix `q`); register `q`
/// of each lane holds elements `(lane / 4, 2 (lane % 4))` and the next of matrix `q`. With
/// `TRANSPOSED`, `.trans`: each matrix arrives transposed.
///
/// # Safety
///
/// Called by all 32 lanes of a warp together (`.sync.aligned`: the same instruction, in
/// converged code), each with `row` the shared-state-space address ([`shared_address`]) of 16
/// readable, initialised bytes, 16-aligned, of the running block's shared memory that nothing
/// writes meanwhile.
#[inline(always)]
pub unsafe fn ldmatrix_x4<const TRANSPOSED: bool>(row: u32) -> [u32; 4] {
    let (a, b, c, d): (u32, u32, u32, u32);
    macro_rules! ldmatrix {
        ($trans:literal) => {
            // SAFETY: as this function's contract.
            unsafe {
                asm!(
                    concat!("ldmatrix.sync.aligned.m8n8.x4", $trans, ".shared.b16 {{{a}, {b}, {c}, {d}}}, [{r}];"),
                    r = in(reg32) row,
                    a = out(reg32) a,
                    b = out(reg32) b,
                    c = out(reg32) c,
                    d = out(reg32) d,
                    // Not `readonly`: a block of side effects, which no pass removes, sinks into a
                    // branch or hoists out of one (see the module docs on convergence).
                    options(nostack),
                )
            }
        };
    }
    if TRANSPOSED {
        ldmatrix!(".trans");
    } else {
        ldmatrix!("");
    }
    [a, b, c, d]
}

/// `mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}.{bf16,f16}.f32`: `d = a · b + c` for a
/// 16 × 16 `a`, a 16 × 8 `b` and 16 × 8 `f32` accumulators, each spread over the warp's lanes
/// as the PTX ISA's "Matrix Fragments for `mma.m16n8k16`" says. `BF16` chooses `bf16` inputs,
/// else `f16`. Reads and writes no memory.
///
/// # Safety
///
/// Called by all 32 lanes of a warp together (`.sync.aligned`), on a GPU of `sm_80` or later.
#[inline(always)]
pub unsafe fn mma_m16n8k16<const BF16: bool>(a: [u32; 4], b: [u32; 2], c: [f32; 4]) -> [f32; 4] {
    let [mut d0, mut d1, mut d2, mut d3] = c;
    macro_rules! mma {
        ($ty:literal) => {
            // SAFETY: a warp-wide register instruction (caller); no memory.
            unsafe {
                asm!(
                    concat!(
                        "mma.sync.aligned.m16n8k16.row.col.f32.", $ty, ".", $ty, ".f32 ",
                        "{{{d0}, {d1}, {d2}, {d3}}}, {{{a0}, {a1}, {a2}, {a3}}}, {{{b0}, {b1}}}, ",
                        "{{{d0}, {d1}, {d2}, {d3}}};"
                    ),
                    d0 = inout(reg32) d0,
                    d1 = inout(reg32) d1,
                    d2 = inout(reg32) d2,
                    d3 = inout(reg32) d3,
                    a0 = in(reg32) a[0],
                    a1 = in(reg32) a[1],
                    a2 = in(reg32) a[2],
                    a3 = in(reg32) a[3],
                    b0 = in(reg32) b[0],
                    b1 = in(reg32) b[1],
                    // Not `pure`: a block of side effects (it reads no memory), which no pass
                    // removes, sinks into a branch or hoists out of one.
                    options(nomem, nostack),
                )
            }
        };
    }
    if BF16 {
        mma!("bf16");
    } else {
        mma!("f16");
    }
    [d0, d1, d2, d3]
}

/// `cp.async.cg.shared.global [dst], [src], 16, bytes`: copies `bytes` (0 to 16) from global
/// memory at `src` to the 16 bytes of shared memory at `dst`, and zeroes the rest of them,
/// asynchronously: the copy belongs to the next group this thread commits
/// ([`cp_async_commit`]), and is complete for this thread once [`cp_async_wait`] says that
/// group is, and for the block's other threads after a barrier that follows that wait.
///
/// # Safety
///
/// - `dst` is the shared-state-space address ([`shared_address`]) of 16 bytes, 16-aligned, of
///   the running block's shared memory that no thread reads or writes until the copy is
///   complete for it;
/// - `src` is 16-aligned and its first `bytes` bytes are readable global memory that nothing
///   writes while the kernel runs (where `bytes` is 0 nothing is read, and `src` is any
///   16-aligned global address the kernel may read);
/// - `bytes` ≤ 16, on a GPU of `sm_80` or later.
#[inline(always)]
pub unsafe fn cp_async_16(dst: u32, src: *const u8, bytes: u32) {
    // SAFETY: as this function's contract.
    unsafe {
        asm!(
            "{{ .reg .b64 g; cvta.to.global.u64 g, {s}; cp.async.cg.shared.global [{d}], [g], 16, {n}; }}",
            d = in(reg32) dst,
            s = in(reg64) src,
            n = in(reg32) bytes,
            options(nostack),
        )
    };
}

/// `cp.async.commit_group`: the thread's copies since the last commit become one group.
///
/// # Safety
///
/// On a GPU of `sm_80` or later (no other condition: a group of no copies is allowed).
#[inline(always)]
pub unsafe fn cp_async_commit() {
    // SAFETY: on sm_80 or later (caller).
    unsafe { asm!("cp.async.commit_group;", options(nostack)) };
}

/// `cp.async.wait_group N`: waits until at most `N` of this thread's most recent groups are
/// incomplete (the older ones are all complete). A memory clobber: no shared-memory read moves
/// above it.
///
/// # Safety
///
/// On a GPU of `sm_80` or later.
#[inline(always)]
pub unsafe fn cp_async_wait<const N: u32>() {
    // SAFETY: on sm_80 or later (caller).
    unsafe { asm!("cp.async.wait_group {n};", n = const N, options(nostack)) };
}

/// [`cp_async_wait`] with a count known at run time: waits until at most `n` of this thread's
/// most recent groups are incomplete, or 7 where `n` is larger (which waits for more).
///
/// # Safety
///
/// On a GPU of `sm_80` or later.
#[inline(always)]
pub unsafe fn cp_async_wait_at_most(n: u32) {
    macro_rules! wait {
        ($($k:literal)*) => {
            match n {
                // SAFETY: on sm_80 or later (caller).
                $( $k => unsafe { cp_async_wait::<$k>() }, )*
                // SAFETY: as above.
                _ => unsafe { cp_async_wait::<7>() },
            }
        };
    }
    wait!(0 1 2 3 4 5 6);
}
