// A read-only view of an imported tensor (the producer may have set READ_ONLY) has no `store`:
// ask for `as_host_mdspan_mut`, which checks the flag.
use dlmd::managed::ManagedTensor;
use dlmd::LayoutRight;

fn zero(tensor: &ManagedTensor) {
    let md = tensor.as_host_mdspan::<i32, 1, LayoutRight>().unwrap();
    md.store([0], 0);
}

fn main() {}
