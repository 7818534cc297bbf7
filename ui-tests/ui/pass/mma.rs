// The tensor-core API used as intended: a step fetched into two tiles, multiplied whole and
// by fragments, and stored. Built with `cargo build`, so the compile-time checks of `ui/mma`
// run here too and accept it.
use dlmd::half::bf16;
use dlmd::kernel::Block;
use dlmd::kernel::block::{RightPadded, TileOf};
use dlmd::kernel::mma::M16N8K16;
use dlmd::{Const, DeviceMdspan, DeviceMdspanMut, Dims};

type TileA = TileOf<bf16, (Const<128>, Const<32>), RightPadded<8>>;
type TileB = TileOf<bf16, (Const<32>, Const<128>), RightPadded<8>>;
type Chunk = (Const<128>, Const<128>);

pub fn body(
    block: Block<'_, 256, (TileA, TileB), Chunk>,
    a: DeviceMdspan<'_, bf16, Dims<2>>,
    b: DeviceMdspan<'_, bf16, Dims<2>>,
    c: DeviceMdspanMut<'_, f32, Dims<2>>,
) {
    let (mut block, (ta, tb)) = block.split();
    if let Some(chunk) = block.chunks(c).next() {
        let [i0, j0] = chunk.origin();
        let fa = block.fetch(ta, &a, [i0, 0]);
        let fb = block.fetch(tb, &b, [0, j0]);
        let (wa, wb) = (block.landed(fa), block.landed(fb));
        let (ra, rb) = block.sync((wa, wb));
        let acc = block.accumulators::<M16N8K16<bf16>, 2, 4, 4, 4>();
        let acc = block.mma(acc, &ra, &rb);
        let fa = block.load_a::<M16N8K16<bf16>, _, _, 2, 4, 4, 4>(&ra, 1).unwrap();
        let fb = block.load_b::<M16N8K16<bf16>, _, _, 2, 4, 4, 4>(&rb, 1).unwrap();
        let acc = block.mma_fragments(acc, &fa, &fb);
        let _ = block.store_accumulators(chunk, acc, |_, x| x);
        let _ = block.sync((ra, rb));
    }
}

fn main() {
    let _ = body
        as fn(
            Block<'static, 256, (TileA, TileB), Chunk>,
            DeviceMdspan<'static, bf16, Dims<2>>,
            DeviceMdspan<'static, bf16, Dims<2>>,
            DeviceMdspanMut<'static, f32, Dims<2>>,
        );
}
