// The tile of `B` is `K × COLS` for the tiling: with 2 × 4 warps of 4 × 4 atoms (`COLS` 128),
// a tile of 64 columns would leave half the warps loading fragments past its end.
use dlmd::half::bf16;
use dlmd::kernel::Block;
use dlmd::kernel::block::{RightPadded, TileOf};
use dlmd::kernel::mma::M16N8K16;
use dlmd::Const;

type TileA = TileOf<bf16, (Const<128>, Const<32>), RightPadded<8>>;
type TileB = TileOf<bf16, (Const<32>, Const<64>), RightPadded<8>>;

pub fn body(block: Block<'_, 256, (TileA, TileB)>) {
    let (mut block, (a, b)) = block.split();
    let a = block.write(a, |_| bf16::ONE);
    let b = block.write(b, |_| bf16::ONE);
    let (a, b) = block.sync((a, b));
    let acc = block.accumulators::<M16N8K16<bf16>, 2, 4, 4, 4>();
    let _acc = block.mma(acc, &a, &b);
}

fn main() {
    let _ = body as fn(Block<'static, 256, (TileA, TileB)>);
}
