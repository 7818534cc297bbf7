// Dynamic extents do not silently become static ones: use `try_into_extents`, which checks them.
use dlmd::{Const, Dims, HostMdspan};

fn fixed<'a>(md: HostMdspan<'a, f32, Dims<2>>) -> HostMdspan<'a, f32, (Const<2>, Const<3>)> {
    md
}

fn main() {}
