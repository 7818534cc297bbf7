// A tile is made by the kernel's `Block`, in each block's shared memory: the host cannot pass
// one.
use dlmd::kernel::block::{Readable, Tile};
use dlmd::kernel::Block;
use dlmd::{Const, LayoutRight};

#[dlmd::kernel]
pub fn read(block: Block<'_, 32>, tile: Tile<'_, f32, (Const<32>, Const<32>), LayoutRight, Readable>) {
    let _ = (block, tile);
}

fn main() {}
