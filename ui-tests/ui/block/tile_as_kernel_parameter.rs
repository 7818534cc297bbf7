// A tile is made by the kernel's `Block`, in each block's shared memory: the host cannot pass
// one.
use dlmd::kernel::block::{Readable, Tile};
use dlmd::{Const, LayoutRight};

#[dlmd::kernel]
pub fn read(tile: Tile<'_, f32, (Const<32>, Const<32>), LayoutRight, Readable>) {
    let _ = tile;
}

fn main() {}
