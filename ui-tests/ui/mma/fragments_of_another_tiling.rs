// Fragments spread an atom's operands over the lanes as their tiling says: fragments loaded
// for 2 × 4 atoms a warp, multiplied into accumulators of 4 × 4, would leave atoms without
// operands. Accumulators and fragments name their tiling, so the product does not type-check.
use dlmd::half::bf16;
use dlmd::kernel::Block;
use dlmd::kernel::block::{RightPadded, TileOf};
use dlmd::kernel::mma::M16N8K16;
use dlmd::Const;

type TileA = TileOf<bf16, (Const<64>, Const<32>), RightPadded<8>>;
type TileB = TileOf<bf16, (Const<32>, Const<128>), RightPadded<8>>;

pub fn body(block: Block<'_, 256, (TileA, TileB)>) {
    let (mut block, (a, b)) = block.split();
    let a = block.write(a, |_| bf16::ONE);
    let b = block.write(b, |_| bf16::ONE);
    let (a, b) = block.sync((a, b));
    let acc = block.accumulators::<M16N8K16<bf16>, 2, 4, 4, 4>();
    let fa = block.load_a::<M16N8K16<bf16>, _, _, 2, 4, 2, 4>(&a, 0).unwrap();
    let fb = block.load_b::<M16N8K16<bf16>, _, _, 2, 4, 2, 4>(&b, 0).unwrap();
    let _acc = block.mma_fragments(acc, &fa, &fb);
}

fn main() {}
