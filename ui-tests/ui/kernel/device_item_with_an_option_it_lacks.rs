// `#[dlmd::device]` keeps an item for kernels (and for host builds that type-check them); the
// compiler decides inlining and the like, so its one option names the dlmd crate where it is
// renamed.
#[dlmd::device(inline)]
fn first(x: dlmd::DeviceMdspan<'_, f32, dlmd::Dims<1>>) -> f32 {
    x[[0]]
}

fn main() {}
