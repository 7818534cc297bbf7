// The parameters are typed for the call's lifetime: a `'static` tensor parameter, which could
// be kept or returned, is no operator's parameter.
use dlmd::torch::{Op, OpError, TensorMut};

struct Static;

impl Op for Static {
    const NAME: &'static str = "static_params";
    const PARAMS: &'static [&'static str] = &["x"];
    type Params<'a> = (TensorMut<'static>,);
    type Returns = ();

    fn call(_: Self::Params<'_>) -> Result<(), OpError> {
        Ok(())
    }
}

fn main() {}
