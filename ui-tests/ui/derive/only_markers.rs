// `PhantomData` markers hold no data: a newtype of markers alone has no DLPack type. (Beside one
// data field they are fine: `struct Tagged<U>(f32, PhantomData<U>);` is an `f32` element.)
use dlmd::DlElement;
use std::marker::PhantomData;

#[derive(Clone, Copy, DlElement)]
#[repr(transparent)]
struct Tag<U>(PhantomData<U>);

fn main() {}
