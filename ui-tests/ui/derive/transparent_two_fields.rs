// A transparent newtype with a marker field: dlmd derives for exactly one field, so that the
// element is that field.
use dlmd::DlElement;
use std::marker::PhantomData;

#[derive(Clone, Copy, DlElement)]
#[repr(transparent)]
struct Tagged<U>(f32, PhantomData<U>);

fn main() {}
