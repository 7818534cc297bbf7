// A warp loads the fragments of `B` two atoms at a time (one `ldmatrix.x4`): with an odd number
// of atoms along `n` (`FN` 3) the last load would read a fourth atom's columns, past the warp's
// share of the tile. A tiling's `FN` is even.
use dlmd::half::bf16;
use dlmd::kernel::Block;
use dlmd::kernel::mma::M16N8K16;

pub fn body(block: Block<'_, 256>) {
    let _acc = block.accumulators::<M16N8K16<bf16>, 2, 4, 4, 3>();
}

fn main() {
    let _ = body as fn(Block<'static, 256>);
}
