// A `DLTensor` from `get()` points into its `DlpackTensor`'s shape and strides: returning it from
// the function that owns the `DlpackTensor` would leave those pointers dangling.
use dlmd::{to_dlpack_tensor, DLTensorRef, HostMdspan, Dims};

fn describe<'a>(md: &HostMdspan<'a, f32, Dims<2>>) -> DLTensorRef<'a> {
    let dl = to_dlpack_tensor(md);
    dl.get()
}

fn main() {}
