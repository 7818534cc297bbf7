// An operator's returns are new tensors (`Torch::empty`): torch takes them as not sharing
// memory with any argument, so a parameter cannot be handed back as one.
use dlmd::torch::{Op, OpError, TensorMut};

struct Echo;

impl Op for Echo {
    const NAME: &'static str = "echo";
    const PARAMS: &'static [&'static str] = &["x"];
    type Params<'a> = (TensorMut<'a>,);
    type Returns = TensorMut<'static>;

    fn call((x,): Self::Params<'_>) -> Result<TensorMut<'static>, OpError> {
        Ok(x)
    }
}

fn main() {}
