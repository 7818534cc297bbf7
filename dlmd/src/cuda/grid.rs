//! The launch configuration that fits a view: the grid whose threads the partition of
//! [`Thread::for_each_mut`](crate::kernel::Thread::for_each_mut) spreads over the view's
//! elements, one thread for four neighbours of the fastest dimension.

use super::LaunchConfig;
use crate::dtype::DlElement;
use crate::extents::Extents;
use crate::layout::Layout;
use crate::space::MemorySpace;
use crate::view::{Access, Mdspan};

/// Threads a block of [`grid_for`].
const BLOCK: u32 = 256;

/// The most blocks [`grid_for`] puts along `y` and `z` (CUDA's limit), and along `x` (where
/// more would only make threads that find no work: the partition's loops stride over the rest).
const MAX_YZ: u32 = 65_535;
const MAX_X: u32 = 1 << 20;

/// A launch configuration for a kernel that writes `view` through
/// [`Thread::for_each_mut`](crate::kernel::Thread::for_each_mut): every thread gets work, no
/// thread waits for another's, and a view too large for one pass is covered by the
/// partition's strides. Blocks of 256 threads, no dynamic shared memory; a launch may pass
/// any other configuration instead, which the partition covers just as well.
///
/// The partition puts four neighbours of the fastest dimension in memory on each `x` thread,
/// the next dimension on `y` and the rest on `z` (rank 1: four neighbours a thread, over all
/// the threads); the grid follows it. An empty view gets one block, which finds no work.
///
/// ```
/// use dlmd::cuda::grid_for;
/// use dlmd::dlmd;
///
/// let data = vec![0.0f32; 1000 * 3];
/// let config = grid_for(&dlmd!(&data, [3, 1000]));
/// // 250 threads cover a row of 1000 (four each); the 3 rows go on `y`.
/// assert_eq!(config.block_dim, (256, 1, 1));
/// assert_eq!(config.grid_dim, (1, 3, 1));
/// ```
pub fn grid_for<T, E, L, S, A>(view: &Mdspan<'_, T, E, L, S, A>) -> LaunchConfig
where
    T: DlElement,
    E: Extents,
    L: Layout,
    S: MemorySpace,
    A: Access,
{
    grid_of::<E, L>(view.extents())
}

/// [`grid_for`] from the extents and layout alone.
pub(crate) fn grid_of<E: Extents, L: Layout>(extents: &E) -> LaunchConfig {
    let extents = extents.to_array();
    let e = extents.as_ref();
    let blocks = |threads: usize, per_block: u32, max: u32| -> u32 {
        u32::try_from(threads.div_ceil(per_block as usize)).map_or(max, |b| b.clamp(1, max))
    };
    let grid_dim = match e.len() {
        0 => (1, 1, 1),
        1 => (blocks(e[0].div_ceil(4), BLOCK, MAX_X), 1, 1),
        rank => {
            let (fast, next) = if L::FIRST_FASTEST { (0, 1) } else { (rank - 1, rank - 2) };
            let rest: usize = (0..rank).filter(|&d| d != fast && d != next).map(|d| e[d]).product();
            (
                blocks(e[fast].div_ceil(4), BLOCK, MAX_X),
                blocks(e[next], 1, MAX_YZ),
                blocks(rest, 1, MAX_YZ),
            )
        }
    };
    LaunchConfig {
        grid_dim,
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Dims, LayoutLeft, LayoutRight};

    #[test]
    fn the_grid_follows_the_partition() {
        let grid = |extents: &[usize]| match *extents {
            [] => grid_of::<Dims<0>, LayoutRight>(&Dims::new([])).grid_dim,
            [a] => grid_of::<Dims<1>, LayoutRight>(&Dims::new([a])).grid_dim,
            [a, b] => grid_of::<Dims<2>, LayoutRight>(&Dims::new([a, b])).grid_dim,
            [a, b, c, d] => grid_of::<Dims<4>, LayoutRight>(&Dims::new([a, b, c, d])).grid_dim,
            _ => unreachable!("the shapes below"),
        };
        assert_eq!(grid(&[]), (1, 1, 1));
        assert_eq!(grid(&[0]), (1, 1, 1), "an empty view still gets a block");
        assert_eq!(grid(&[1024]), (1, 1, 1));
        assert_eq!(grid(&[1025]), (2, 1, 1));
        assert_eq!(
            grid(&[usize::MAX]),
            (MAX_X, 1, 1),
            "the partition strides over the rest"
        );
        assert_eq!(grid(&[100_000, 2048]), (2, MAX_YZ, 1));
        assert_eq!(grid(&[2, 3, 5, 7]), (1, 5, 6));
        let left = grid_of::<Dims<2>, LayoutLeft>(&Dims::new([4096, 3])).grid_dim;
        assert_eq!(left, (4, 3, 1), "column-major: the first dimension is the fastest");
    }
}
