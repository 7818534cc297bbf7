// A view of shared memory writes through `&self`, like `&Cell<T>`: it cannot move to another
// thread, where its stores would race with this thread's.
use dlmd::managed::ManagedTensor;
use dlmd::LayoutRight;

fn spawn_writer(tensor: &mut ManagedTensor) {
    let md = tensor.as_host_mdspan_mut::<f32, 1, LayoutRight>().unwrap();
    std::thread::scope(|s| {
        s.spawn(move || md.store([0], 1.0));
    });
}

fn main() {}
