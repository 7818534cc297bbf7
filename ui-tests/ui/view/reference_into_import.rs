// An imported tensor's memory is shared: its producer and other consumers may write it while
// the view lives, so the view lends no `&T` (two imports would otherwise give two `&mut T` to one
// element). Copy values out with `load`, or promise exclusivity with `unsafe assume_unaliased`.
use dlmd::{HostMdspanAliased, Dims};
use dlmd::managed::ManagedTensor;
use dlmd::LayoutRight;

fn first(tensor: &ManagedTensor) -> &f64 {
    let md = tensor.view::<HostMdspanAliased<'_, f64, Dims<1>, LayoutRight>>().unwrap();
    &md[[0]]
}

fn main() {}
