//! The register split of a specialised block: while a pipeline runs, the producer warpgroup,
//! which only starts copies, gives registers back (`setmaxnreg.dec`) and the consumer
//! warpgroups, which hold the accumulators, take them (`setmaxnreg.inc`); when the pipeline
//! is done, every warpgroup goes back to its registers at launch. Each role changes its
//! registers inside its own branch, first and last: `ptxas` sizes each stretch of code by the
//! `setmaxnreg` before it, and drops them all (its note C7507) where paths with different
//! counts meet.
//!
//! `ptxas` sizes a thread's registers by the entry point's launch bounds where a kernel
//! changes them: `65536 / (threads · blocks)` registers a thread (the register file shared by
//! `min_blocks_per_sm` blocks), rounded down to a multiple of 8. Without `min_blocks_per_sm` it
//! cannot, and ignores `setmaxnreg`; `Block::specialise` then leaves the registers as they are.
//! The split is computed here so that the pool always holds what the consumers ask for: an
//! increase the pool cannot meet would wait forever.
//!
//! `ptxas` keeps a function's `setmaxnreg`s all or none. Where it keeps them, a thread's
//! registers at launch are exactly the bound's (`ptxas` sizes the entry so), which is what the
//! split counts from. Where it drops them (its notes C7507 and C7508; `scripts/ptx-check.sh`
//! fails on them for the example kernels), none runs and every thread keeps its registers at
//! launch: slower, never a hang. The bounds themselves (`.reqntid`, `.minnctapersm`) are
//! written by `dlmd-build`; PTX built otherwise has none, and `ptxas` drops the split.

/// The registers of the producer warpgroup's threads while a pipeline runs.
const PRODUCER: u32 = 40;
/// The most registers a consumer thread asks for.
const MOST: u32 = 240;
/// A multiprocessor's register file, in 32-bit registers.
const FILE: u32 = 65536;

/// The registers a thread holds at launch, for a block of `threads` with `min_blocks` blocks
/// a multiprocessor (as `ptxas` sizes them where the kernel changes them), if it can change
/// them: `min_blocks` declared (not 0). The count is the register file's share, without the
/// cap of 255 registers a thread that `ptxas` applies too: the two differ only for blocks of
/// fewer than 257 threads, where [`split`] finds no split (a consumer asks for at most
/// `MOST`, fewer than such a share).
const fn at_launch(threads: u32, min_blocks: u32) -> Option<u32> {
    if min_blocks == 0 || threads == 0 {
        return None;
    }
    Some(FILE / threads / min_blocks / 8 * 8)
}

/// The split `(at launch, producer, consumer)` of a block of `threads` (a producer warpgroup
/// and `threads / 128 − 1` consumers) with `min_blocks` blocks a multiprocessor, where the
/// consumers gain registers by it: the producer's `PRODUCER`, and what that frees dealt to the
/// consumers, rounded down to a multiple of 8, at most `MOST`.
pub(crate) const fn split(threads: u32, min_blocks: u32) -> Option<(u32, u32, u32)> {
    let Some(launch) = at_launch(threads, min_blocks) else {
        return None;
    };
    if threads < 256 || !threads.is_multiple_of(128) || launch <= PRODUCER {
        return None;
    }
    let consumers = threads - 128;
    let consumer = (launch * threads - 128 * PRODUCER) / consumers / 8 * 8;
    let consumer = if consumer > MOST { MOST } else { consumer };
    if consumer <= launch {
        return None;
    }
    Some((launch, PRODUCER, consumer))
}

/// The split of a block of `THREADS` threads with one block a multiprocessor, as constants
/// (`setmaxnreg` takes immediates): [`split`]`(THREADS, 1)`, or all zero where there is none.
pub(crate) struct Split<const THREADS: usize>;

impl<const THREADS: usize> Split<THREADS> {
    /// The split, or `(0, 0, 0)`.
    const ALL: (u32, u32, u32) = match split(THREADS as u32, 1) {
        Some(split) => split,
        None => (0, 0, 0),
    };
    /// Whether there is one.
    #[cfg_attr(not(any(target_arch = "nvptx64", test)), allow(dead_code))]
    pub(crate) const SOME: bool = Self::ALL.0 != 0;
    /// The registers at launch.
    #[cfg_attr(not(target_arch = "nvptx64"), allow(dead_code))]
    const LAUNCH: u32 = Self::ALL.0;
    /// The producer's.
    #[cfg_attr(not(target_arch = "nvptx64"), allow(dead_code))]
    const PRODUCER: u32 = Self::ALL.1;
    /// Each consumer's.
    #[cfg_attr(not(target_arch = "nvptx64"), allow(dead_code))]
    const CONSUMER: u32 = Self::ALL.2;

    /// The producer's warpgroup gives registers back, down to `PRODUCER` a thread, for the
    /// pipeline; [`producer_done`](Self::producer_done) takes them again.
    ///
    /// # Safety
    ///
    /// All four warps of the producer's warpgroup together, converged, at their registers at
    /// launch, synchronized since their last `setmaxnreg`; the kernel's entry point declares
    /// `.reqntid THREADS` and `.minnctapersm 1`; `SOME`; on `sm_90a`.
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    pub(crate) unsafe fn producer_starts() {
        // SAFETY: as this function's contract: from `LAUNCH` to fewer.
        unsafe { core::arch::asm!("setmaxnreg.dec.sync.aligned.u32 {n};", n = const Self::PRODUCER, options(nostack)) };
    }

    /// The producer's warpgroup, done with the pipeline, waits at the block's barrier for
    /// every thread of the block, then takes its registers at launch again (once the consumers
    /// have given theirs back).
    ///
    /// # Safety
    ///
    /// As [`producer_starts`](Self::producer_starts), after it; every other thread of the block
    /// reaches the block's barrier (0) once too, from [`consumer_done`](Self::consumer_done),
    /// and no thread is inside another use of barrier 0.
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    pub(crate) unsafe fn producer_done() {
        // SAFETY: every thread of the block reaches barrier 0 once here or in `consumer_done`
        // (caller): `barrier.sync` (not `.aligned`) may be reached from both places.
        unsafe { core::arch::asm!("barrier.sync 0;", options(nostack)) };
        // SAFETY: the warpgroup's warps, synchronized (above), at `PRODUCER`, back up to
        // `LAUNCH`, which the pool holds once the consumers have given back theirs (they do
        // without waiting for the producer).
        unsafe { core::arch::asm!("setmaxnreg.inc.sync.aligned.u32 {n};", n = const Self::LAUNCH, options(nostack)) };
    }

    /// A consumer warpgroup takes registers, up to `CONSUMER` a thread, for the pipeline;
    /// [`consumer_done`](Self::consumer_done) gives them back.
    ///
    /// # Safety
    ///
    /// All four warps of a consumer warpgroup together, converged, at their registers at
    /// launch, synchronized since their last `setmaxnreg`; the kernel's entry point declares
    /// `.reqntid THREADS` and `.minnctapersm 1`; `SOME`; on `sm_90a`.
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    pub(crate) unsafe fn consumer_starts() {
        // SAFETY: as this function's contract: from `LAUNCH` to more; the block's pool,
        // `LAUNCH · THREADS`, holds `128 · PRODUCER` and `CONSUMER · (THREADS − 128)` together
        // (`split`), so the increase is met once the producer has given its registers back.
        unsafe { core::arch::asm!("setmaxnreg.inc.sync.aligned.u32 {n};", n = const Self::CONSUMER, options(nostack)) };
    }

    /// A consumer warpgroup, done with the pipeline, waits at the block's barrier for every
    /// thread of the block, then gives its registers back, down to those at launch.
    ///
    /// # Safety
    ///
    /// As [`consumer_starts`](Self::consumer_starts), after it; as
    /// [`producer_done`](Self::producer_done) for barrier 0.
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    pub(crate) unsafe fn consumer_done() {
        // SAFETY: as `producer_done`.
        unsafe { core::arch::asm!("barrier.sync 0;", options(nostack)) };
        // SAFETY: the warpgroup's warps, synchronized (above), at `CONSUMER`, down to `LAUNCH`.
        unsafe { core::arch::asm!("setmaxnreg.dec.sync.aligned.u32 {n};", n = const Self::LAUNCH, options(nostack)) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_split_of_a_block_is_what_its_pool_holds() {
        // One producer and two consumers, one block a multiprocessor: CUTLASS's 40 / 232.
        assert_eq!(split(384, 1), Some((168, 40, 232)));
        assert_eq!(split(512, 1), Some((128, 40, 152)));
        assert_eq!(split(640, 1), Some((96, 40, 104)));
        // No `min_blocks_per_sm`: `ptxas` ignores `setmaxnreg`, and no split is made.
        assert_eq!(split(384, 0), None);
        // One consumer: 256 registers at launch already, more than a consumer asks for.
        assert_eq!(split(256, 1), None);
        for threads in (256..=1024).step_by(128) {
            for blocks in 0..=8 {
                if let Some((launch, producer, consumer)) = split(threads, blocks) {
                    // The pool holds both roles' registers, and each asks for a valid count.
                    assert!(128 * producer + (threads - 128) * consumer <= launch * threads);
                    assert!(producer < launch && launch < consumer && consumer <= 240);
                    for r in [launch, producer, consumer] {
                        assert!(
                            r.is_multiple_of(8) && (24..=256).contains(&r),
                            "{threads} {blocks}: {r}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn split_constants_follow_the_split_with_one_block() {
        assert_eq!([Split::<384>::SOME, Split::<256>::SOME], [true, false]);
        assert_eq!(
            (Split::<384>::LAUNCH, Split::<384>::PRODUCER, Split::<384>::CONSUMER),
            (168, 40, 232)
        );
    }
}
