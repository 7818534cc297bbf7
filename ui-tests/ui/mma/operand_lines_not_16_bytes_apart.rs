// `ldmatrix` reads each row of 8 `bf16` of a fragment as 16 bytes, 16-aligned: in a tile of `A`
// whose rows start 66 bytes apart (`RightPadded<1>` on 32 columns), all but every eighth row
// would be misaligned. Fragments cannot be loaded from it; the check runs where the kernel is
// compiled.
use dlmd::half::bf16;
use dlmd::kernel::Block;
use dlmd::kernel::block::{RightPadded, TileOf};
use dlmd::kernel::mma::M16N8K16;
use dlmd::Const;

type Tiles = TileOf<bf16, (Const<128>, Const<32>), RightPadded<1>>;

pub fn body(block: Block<'_, 256, Tiles>) {
    let (mut block, a) = block.split();
    let a = block.write(a, |_| bf16::ONE);
    let a = block.sync(a);
    let _ = block.load_a::<M16N8K16<bf16>, _, _, 2, 4, 4, 4>(&a, 0);
}

fn main() {
    let _ = body as fn(Block<'static, 256, Tiles>);
}
