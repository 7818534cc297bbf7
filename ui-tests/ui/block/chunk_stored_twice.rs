// Each store hands a chunk's elements to the block's threads by one partition: `store` gives
// neighbouring threads neighbouring elements, `store_runs` gives each thread a run. Stored twice,
// one element would go to two threads, whose writes no barrier orders: a race. A store takes the
// chunk, so it is written once.
use dlmd::kernel::Block;
use dlmd::{Const, DeviceMdspanMut, Dims};

pub fn body(mut block: Block<'_, 256, (), (Const<1024>,)>, out: DeviceMdspanMut<'_, f32, Dims<1>>) {
    for chunk in block.chunks(out) {
        block.store(chunk, |_| 1.0);
        let _ = block.store_runs(chunk, |_| [2.0f32; 4]);
    }
}

fn main() {}
