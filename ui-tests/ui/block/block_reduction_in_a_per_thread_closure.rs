// A block reduction has a barrier inside: like any barrier, it runs in the kernel's uniform
// code, never in a per-thread closure.
use dlmd::kernel::Block;

pub fn body(mut block: Block<'_, 256>) {
    let ones = block.each(|_| 1.0f32);
    block.each(|lane| {
        if lane.warp() == 0 {
            let _ = block.sum(ones);
        }
    });
}

fn main() {}
