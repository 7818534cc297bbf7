// `min_blocks_per_sm` bounds how many blocks share a multiprocessor, which only means something
// where the kernel fixes its block's size: a cooperative kernel, whose `Block` says it, or an
// element-wise kernel given `block_threads = N`. Without it, a `Thread` kernel runs on blocks of
// any size.
#[dlmd::kernel(min_blocks_per_sm = 2)]
pub fn scale(thread: dlmd::kernel::Thread, mut x: dlmd::DeviceMdspanMut<'_, f32, dlmd::Dims<1>>) {
    thread.for_each_mut(&mut x, |_, v| *v *= 2.0);
}

fn main() {}
