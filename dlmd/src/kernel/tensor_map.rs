#![allow(missing_docs)]
//! placeholder for local compile checks
use crate::extents::{Const};
use crate::kernel::swizzle::Swizzle;
use core::marker::PhantomData;
pub struct TensorMap<'a, T, B, S> { map: *const u64, extents: [u64; 2], p: PhantomData<(&'a T, B, S)> }
impl<'a, T, const R: usize, const C: usize, S: Swizzle> TensorMap<'a, T, (Const<R>, Const<C>), S> {
    pub fn extents(&self) -> [usize; 2] { [self.extents[0] as usize, self.extents[1] as usize] }
    pub fn map(&self) -> *const u64 { self.map }
}
unsafe impl<T, B, S> Sync for TensorMap<'_, T, B, S> {}
#[repr(C)] #[derive(Clone, Copy)] pub struct P { map: *const u64, extents: [u64; 2] }
unsafe impl<T: crate::dtype::DlElement, B: 'static, S: 'static> crate::kernel::KernelParam for TensorMap<'_, T, B, S> {
    type Param = P;
    fn to_param(&self) -> P { P { map: self.map, extents: self.extents } }
    unsafe fn from_param(p: P) -> Self { TensorMap { map: p.map, extents: p.extents, p: PhantomData } }
}
