// An imported tensor's launches run on the stream its data is ready on, and nothing else orders
// them after the producer's work. Which stream that is only the producer knows:
// `python::import_for_kernel` asks it. Pairing a tensor with a stream by hand is a promise the
// launch relies on, so `Imported::new` is `unsafe`, with the promise in its `# Safety`.
use dlmd::cuda::Imported;
use dlmd::exchange::WorkStream;
use dlmd::managed::ManagedTensor;

fn claim(tensor: ManagedTensor) -> Imported {
    Imported::new(tensor, WorkStream::DEFAULT)
}

fn main() {}
