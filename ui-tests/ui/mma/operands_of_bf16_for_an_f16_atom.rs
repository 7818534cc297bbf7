// `bf16` and `f16` are both 16 bits but not the same numbers: `bf16` tiles multiplied by the
// `f16` instruction would give wrong products. The tiles' element type is the atom's `Input`.
use dlmd::half::{bf16, f16};
use dlmd::kernel::Block;
use dlmd::kernel::block::{RightPadded, TileOf};
use dlmd::kernel::mma::M16N8K16;
use dlmd::Const;

type TileA = TileOf<bf16, (Const<128>, Const<32>), RightPadded<8>>;
type TileB = TileOf<bf16, (Const<32>, Const<128>), RightPadded<8>>;

pub fn body(block: Block<'_, 256, (TileA, TileB)>) {
    let (mut block, (a, b)) = block.split();
    let a = block.write(a, |_| bf16::ONE);
    let b = block.write(b, |_| bf16::ONE);
    let (a, b) = block.sync((a, b));
    let acc = block.accumulators::<M16N8K16<f16>, 2, 4, 4, 4>();
    let _acc = block.mma(acc, &a, &b);
}

fn main() {}
