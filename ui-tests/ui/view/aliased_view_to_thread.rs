// A view of shared memory writes through `&self`, like `&Cell<T>`: it cannot move to another
// thread, where its stores would race with this thread's.
use dlmd::{HostMdspanAliasedMut, Dims};
use dlmd::managed::ManagedTensor;
use dlmd::LayoutRight;

fn spawn_writer(tensor: &mut ManagedTensor) {
    let md = tensor.view_mut::<HostMdspanAliasedMut<'_, f32, Dims<1>, LayoutRight>>().unwrap();
    std::thread::scope(|s| {
        s.spawn(move || md.store([0], 1.0));
    });
}

fn main() {}
