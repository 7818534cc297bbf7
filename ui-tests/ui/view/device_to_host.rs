// A device view cannot be read as host memory: it does not convert to a host view.
use dlmd::{DeviceMdspan, Dims, Host, HostMdspan};

fn to_host(md: DeviceMdspan<'_, u8, Dims<1>>) -> HostMdspan<'_, u8, Dims<1>> {
    md.into_space(Host)
}

fn main() {}
