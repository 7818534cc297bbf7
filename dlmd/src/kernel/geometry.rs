//! Where the running thread is in the launch (kernels only): its id and the thread count
//! along each axis, and the grid-stride loops that hand every index of an axis to one thread.

use core::arch::nvptx;

/// One axis of the launch: this thread's global id along it, and the number of threads.
#[derive(Clone, Copy)]
pub(crate) struct Axis {
    pub(crate) id: usize,
    pub(crate) count: usize,
}

impl Axis {
    /// `f(i)` for `i = id, id + count, …` below `end`: every `i` below `end` is visited by
    /// exactly one thread of the axis.
    #[inline(always)]
    pub(crate) fn stride(self, end: usize, mut f: impl FnMut(usize)) {
        let mut i = self.id;
        while i < end {
            f(i);
            i += self.count;
        }
    }
}

/// What [`Axis::chunks`] hands a thread: four neighbouring indices from the first, or one.
pub(crate) enum Chunk {
    Four(usize),
    One(usize),
}

impl Axis {
    /// Every index below `end`, to exactly one thread of the axis: thread `id` takes the four
    /// from `4 id`, then those `4 count` further, …; where fewer than four remain, one at a
    /// time in the same way. With `PAIRS`, two fours a step, so that a reading thread has two
    /// loads in flight before it uses either.
    #[inline(always)]
    pub(crate) fn chunks<const PAIRS: bool>(self, end: usize, mut f: impl FnMut(Chunk)) {
        let full = end / 4 * 4;
        let mut i = 4 * self.id;
        while PAIRS && i + 4 * self.count < full {
            f(Chunk::Four(i));
            f(Chunk::Four(i + 4 * self.count));
            i += 8 * self.count;
        }
        while i < full {
            f(Chunk::Four(i));
            i += 4 * self.count;
        }
        let mut i = full + self.id;
        while i < end {
            f(Chunk::One(i));
            i += self.count;
        }
    }
}

macro_rules! axis {
    ($name:ident, $tid:ident, $ntid:ident, $ctaid:ident, $nctaid:ident) => {
        /// This thread's global id along the axis, and the threads along it.
        #[inline(always)]
        pub(crate) fn $name() -> Axis {
            // SAFETY: each intrinsic reads a special register of the running thread; none
            // has a precondition.
            let (t, n, c, g) = unsafe { (nvptx::$tid(), nvptx::$ntid(), nvptx::$ctaid(), nvptx::$nctaid()) };
            Axis {
                id: c as usize * n as usize + t as usize,
                count: g as usize * n as usize,
            }
        }
    };
}
axis!(x, _thread_idx_x, _block_dim_x, _block_idx_x, _grid_dim_x);
axis!(y, _thread_idx_y, _block_dim_y, _block_idx_y, _grid_dim_y);
axis!(z, _thread_idx_z, _block_dim_z, _block_idx_z, _grid_dim_z);

/// The three axes as one: this thread's linear id (x fastest) and the launch's threads.
#[inline(always)]
pub(crate) fn linear() -> Axis {
    let (x, y, z) = (x(), y(), z());
    Axis {
        id: (z.id * y.count + y.id) * x.count + x.id,
        count: x.count * y.count * z.count,
    }
}
