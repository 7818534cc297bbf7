// An import vouches that its tensor's data is ready on its stream. Safe code may change the
// tensor's elements on the host (`tensor_mut` gives its read-write views) but not the tensor
// itself: two imports' tensors swapped would each be launched over on a stream that orders
// nothing for it.
use dlmd::cuda::Imported;

fn swap(a: &mut Imported, b: &mut Imported) {
    let (Some(x), Some(y)) = (a.tensor_mut(), b.tensor_mut()) else {
        return;
    };
    core::mem::swap(&mut *x, &mut *y);
}

fn main() {
    let _ = swap;
}
