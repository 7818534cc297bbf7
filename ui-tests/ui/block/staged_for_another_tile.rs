// A staged share is dealt for one tile type (its elements, extents and layout, and the order of
// the partition): written into a tile of another shape, some elements would be written twice
// and others never. The share's type names its tile, so the write does not compile.
use dlmd::kernel::Block;
use dlmd::kernel::block::{RightPadded, TileOf};
use dlmd::Const;

type Plain = TileOf<f32, (Const<32>, Const<32>)>;
type Padded = TileOf<f32, (Const<32>, Const<32>), RightPadded<1>>;

pub fn body(block: Block<'_, 256, (Plain, Padded)>) {
    let (mut block, (_plain, padded)) = block.split();
    let staged = block.each(|lane| lane.stage::<Plain>().read::<4>(|[i, j]| (i + j) as f32));
    let written = block.write_staged(padded, staged);
    let _readable = block.sync(written);
}

fn main() {}
