// A result may share an argument's memory (`input_output_aliases`): views of both on one thread
// read and write it in turn, but a buffer on another thread would race with them. Buffers stay
// on the call's thread.
use dlmd::xla::{Call, Handler, HandlerError, Platform};
use dlmd::{Dims, HostMdspanAliasedMut};

struct Races;

impl Handler for Races {
    const PLATFORM: Platform = Platform::Host;

    fn execute(call: &Call<'_>) -> Result<(), HandlerError> {
        let mut y = call.ret(0)?;
        std::thread::scope(|s| {
            s.spawn(move || {
                if let Ok(v) = y.view_mut::<HostMdspanAliasedMut<'_, f32, Dims<1>>>() {
                    v.fill(0.0);
                }
            });
        });
        Ok(())
    }
}

fn main() {}
