// XLA's buffers are valid for the call only: a handler cannot keep one (or a view of it) past
// `execute`, here for a later call on the same thread.
use dlmd::xla::{Buffer, Call, Handler, HandlerError, Platform};
use std::cell::RefCell;

thread_local! {
    static KEPT: RefCell<Option<Buffer<'static>>> = const { RefCell::new(None) };
}

struct Keeps;

impl Handler for Keeps {
    const PLATFORM: Platform = Platform::Host;

    fn execute(call: &Call<'_>) -> Result<(), HandlerError> {
        let x = call.arg(0)?;
        KEPT.with(|kept| *kept.borrow_mut() = Some(x));
        Ok(())
    }
}

fn main() {}
