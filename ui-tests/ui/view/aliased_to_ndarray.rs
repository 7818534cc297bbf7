// An import of memory others share is an aliased view: it does not become an ndarray view,
// which would hand out references to elements someone else may write.
use dlmd::{dlpack::DLTensor, to_host_mdspan_aliased, LayoutRight};

fn as_ndarray(t: &DLTensor) -> ndarray::ArrayView2<'_, f32> {
    let md = unsafe { to_host_mdspan_aliased::<f32, 2, LayoutRight>(t) }.unwrap();
    dlmd::ndarray::to_array_view(md)
}

fn main() {}
