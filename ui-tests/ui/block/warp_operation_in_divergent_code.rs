// A warp shuffle needs every lane of the warp: one inside a branch of per-thread code would
// leave lanes out. Warp operations, like barriers, take `&mut Block`.
use dlmd::kernel::Block;

pub fn body(mut block: Block<'_, 256>) {
    let values = block.each(|lane| lane.index() as f32);
    block.each(|lane| {
        if lane.lane() < 16 {
            let _ = block.warp_sum(values);
        }
    });
}

fn main() {}
