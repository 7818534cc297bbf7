// A `WorkStream` says that a producer's data is ready on a stream. Made from any number, it
// would let safe code claim a stream nothing was ordered on, so `WorkStream::from_raw` is
// `unsafe`: the caller vouches for the stream, as `Imported::new` requires.
use dlmd::exchange::WorkStream;

fn claim(handle: usize) -> WorkStream {
    WorkStream::from_raw(handle)
}

fn main() {}
