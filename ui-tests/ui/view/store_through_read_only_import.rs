// A read-only view of an imported tensor (the producer may have set READ_ONLY) has no `store`:
// ask for `view_mut`, which checks the flag.
use dlmd::{HostMdspanAliased, Dims};
use dlmd::managed::ManagedTensor;
use dlmd::LayoutRight;

fn zero(tensor: &ManagedTensor) {
    let md = tensor.view::<HostMdspanAliased<'_, i32, Dims<1>, LayoutRight>>().unwrap();
    md.store([0], 0);
}

fn main() {}
