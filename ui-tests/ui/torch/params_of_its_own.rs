// An operator's parameters are tuples of the library's parameter types: their schema types are
// what torch is told, and which values the kernel treats as written tensors. A type of one's own
// could tell torch one thing and the kernel another.
use dlmd::torch::{OpError, Params, StableIValue, Torch};

struct Mine;

impl<'a> Params<'a> for Mine {
    const COUNT: usize = 2;
    const TYPES: &'static [(&'static str, bool)] = &[("int n, Tensor", true)];
    unsafe fn take(_: &[StableIValue], _: &'static Torch, _: &'static [&'static str]) -> Result<Self, OpError> {
        Ok(Mine)
    }
    fn span(&self, _: usize) -> Option<Result<(usize, usize), OpError>> {
        None
    }
}

fn main() {}
