// An opaque device view does not convert to a host view (nor to a view of another device).
use dlmd::space::{Metal, Vulkan};
use dlmd::{Dims, Host, HostMdspan, Opaque, OpaqueMdspan};

fn to_host(md: OpaqueMdspan<'_, u8, Dims<1>, Metal>) -> HostMdspan<'_, u8, Dims<1>> {
    md.into_space(Host)
}

fn to_vulkan(md: OpaqueMdspan<'_, u8, Dims<1>, Metal>) -> OpaqueMdspan<'_, u8, Dims<1>, Vulkan> {
    md.into_space(Opaque::new(0))
}

fn main() {}
