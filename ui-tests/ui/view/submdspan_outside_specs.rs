// Only dlmd's slice tuples (an index or a range per dimension) slice a view: a type of one's own
// could claim a layout the slice does not have, or select past the extents, so the trait is
// sealed.
use dlmd::view::{SliceError, SliceSpecs};
use dlmd::{Dims, HostMdspan};

type Kept = <(core::ops::RangeFull,) as SliceSpecs<[usize; 1]>>::RightOk;

#[derive(Clone)]
struct Past;

impl SliceSpecs<[usize; 2]> for Past {
    type Extents = Dims<2>;
    type RightOk = Kept;
    type LeftOk = Kept;
    fn resolve(&self, _: &[usize; 2]) -> Result<([usize; 8], [Option<usize>; 8]), SliceError> {
        let mut kept = [None; 8];
        kept[0] = Some(1000);
        kept[1] = Some(2);
        Ok(([0; 8], kept))
    }
}

fn main() {
    let data = [0i32; 4];
    let md = HostMdspan::<i32, Dims<2>>::from_slice(&data, Dims::new([2, 2])).unwrap();
    let _ = md.submdspan(Past);
}
