// Nothing becomes managed memory: a host view cannot claim its data is reachable from the GPU.
use dlmd::{dlmd, Managed};

fn main() {
    let data = [1u16; 3];
    let _managed = dlmd!(&data, [3]).into_space(Managed::new(0));
}
