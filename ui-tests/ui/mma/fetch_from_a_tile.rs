// `cp.async` copies from global memory: given a view of a block-shared tile, it would read a
// shared-memory address as a global one. `fetch` takes views of device or managed memory only
// (a `KernelSpace`), and a tile's view is `BlockShared`.
use dlmd::half::bf16;
use dlmd::kernel::Block;
use dlmd::kernel::block::{RightPadded, TileOf};
use dlmd::Const;

type Tile = TileOf<bf16, (Const<128>, Const<32>), RightPadded<8>>;

pub fn body(block: Block<'_, 256, (Tile, Tile)>) {
    let (mut block, (source, tile)) = block.split();
    let source = block.write(source, |_| bf16::ONE);
    let source = block.sync(source);
    let fetching = block.fetch(tile, &source.view(), [0, 0]);
    let _written = block.landed(fetching);
}

fn main() {}
