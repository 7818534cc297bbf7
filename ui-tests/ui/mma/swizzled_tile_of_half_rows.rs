// `Swizzle128` permutes the 16-byte pieces of 128-byte rows: a tile whose rows are 32 `bf16`
// (64 bytes) would have its pieces permuted into the next row. A swizzled tile's rows are
// whole swizzled rows, checked where the kernel is compiled (`Swizzle64` fits these rows).
use dlmd::half::bf16;
use dlmd::kernel::Block;
use dlmd::kernel::block::{RightSwizzled, TileOf};
use dlmd::kernel::swizzle::Swizzle128;
use dlmd::{Const, DeviceMdspan, Dims};

type Tiles = TileOf<bf16, (Const<128>, Const<32>), RightSwizzled<Swizzle128>>;

pub fn body(block: Block<'_, 256, Tiles>, a: DeviceMdspan<'_, bf16, Dims<2>>) {
    let (mut block, tile) = block.split();
    let fetching = block.fetch(tile, &a, [0, 0]);
    let _written = block.landed(fetching);
}

fn main() {
    let _ = body as fn(Block<'static, 256, Tiles>, DeviceMdspan<'static, bf16, Dims<2>>);
}
