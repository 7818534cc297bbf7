// An operator's tensors are the call's: torch may free or move their memory once the call
// returns, so a kernel cannot keep one for a later call.
use dlmd::torch::{Op, OpError, Tensor};
use std::cell::RefCell;

thread_local! {
    static KEPT: RefCell<Option<Tensor<'static>>> = const { RefCell::new(None) };
}

struct Keeps;

impl Op for Keeps {
    const NAME: &'static str = "keeps";
    const PARAMS: &'static [&'static str] = &["x"];
    type Params<'a> = (Tensor<'a>,);
    type Returns = ();

    fn call((x,): Self::Params<'_>) -> Result<(), OpError> {
        KEPT.with(|kept| *kept.borrow_mut() = Some(x));
        Ok(())
    }
}

fn main() {}
