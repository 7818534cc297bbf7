// An import of memory others share is an aliased view: it does not become an ndarray view,
// which would hand out references to elements someone else may write.
use dlmd::{HostMdspanAliased, Dims};
use dlmd::{dlpack::DLTensor, LayoutRight};

fn as_ndarray(t: &DLTensor) -> ndarray::ArrayView2<'_, f32> {
    let md = unsafe { HostMdspanAliased::<f32, Dims<2>, LayoutRight>::from_dlpack(t) }.unwrap();
    dlmd::ndarray::to_array_view(md)
}

fn main() {}
