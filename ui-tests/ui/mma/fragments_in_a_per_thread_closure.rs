// Fragments are spread over a warp's lanes as `ldmatrix` left them: each lane's registers mean
// something only to the warp-wide `mma.sync` in uniform code. They are not `Sync`, so no
// per-thread closure can take them.
use dlmd::half::bf16;
use dlmd::kernel::Block;
use dlmd::kernel::block::{RightPadded, TileOf};
use dlmd::kernel::mma::M16N8K16;
use dlmd::Const;

type Tiles = TileOf<bf16, (Const<128>, Const<32>), RightPadded<8>>;

pub fn body(block: Block<'_, 256, Tiles>) {
    let (mut block, a) = block.split();
    let a = block.write(a, |_| bf16::ONE);
    let a = block.sync(a);
    let fa = block.load_a::<M16N8K16<bf16>, _, _, 2, 4, 4, 4>(&a, 0).unwrap();
    let _ = block.each(move |_| {
        let _mine = &fa;
    });
}

fn main() {}
