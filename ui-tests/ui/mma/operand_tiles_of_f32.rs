// The operand tiles hold the atom's input type: `f32` tiles given to a `bf16` product would be
// read as pairs of `bf16`. The tiles' element type is the atom's `Input`, so the call does not
// type-check.
use dlmd::half::bf16;
use dlmd::kernel::Block;
use dlmd::kernel::block::TileOf;
use dlmd::kernel::mma::M16N8K16;
use dlmd::Const;

type TileA = TileOf<f32, (Const<128>, Const<32>)>;
type TileB = TileOf<f32, (Const<32>, Const<128>)>;

pub fn body(block: Block<'_, 256, (TileA, TileB)>) {
    let (mut block, (a, b)) = block.split();
    let a = block.write(a, |_| 1.0);
    let b = block.write(b, |_| 1.0);
    let (a, b) = block.sync((a, b));
    let acc = block.accumulators::<M16N8K16<bf16>, 2, 4, 4, 4>();
    let _acc = block.mma(acc, &a, &b);
}

fn main() {}
