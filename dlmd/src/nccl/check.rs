//! What every collective checks before NCCL is called: the ranks it names, the device its views
//! are on, and that their sizes agree with each other and with the world size.
//!
//! The collectives of [`Communicator`](super::Communicator) call these; they are public so that
//! a caller can check shapes ahead of a collective without a GPU or NCCL. None of them reads the
//! memory a view points to.
//!
//! ```
//! use dlmd::nccl::{NcclError, check};
//! assert_eq!(check::peer("send", 1, 2).unwrap(), 1);
//! assert!(matches!(check::peer("send", 2, 2), Err(NcclError::Rank { rank: 2, world: 2, .. })));
//! assert!(matches!(check::ranks(0, 0), Err(NcclError::World { .. })));
//! ```

use super::{NcclElement, NcclError};
use crate::cuda::DeviceMemory;
use crate::extents::Extents;
use crate::layout::{CompactLayout, Mapping};
use crate::view::{Access, Mdspan};
use std::ffi::c_int;

/// A view as NCCL takes it: a count of values (elements × lanes) at an address.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Buffer {
    /// How many NCCL values the view holds: its elements times their lanes.
    pub count: usize,
    /// The address of its first element.
    pub address: usize,
}

/// `rank` and `world` as NCCL's `int`s: the rank below the world size, which is 1 to `c_int::MAX`.
pub fn ranks(rank: usize, world: usize) -> Result<(c_int, c_int), NcclError> {
    match (c_int::try_from(rank), c_int::try_from(world)) {
        (Ok(r), Ok(w)) if r < w => Ok((r, w)),
        _ => Err(NcclError::World { rank, world }),
    }
}

/// A root or peer `rank` of `op`, which must be one of `world` ranks.
pub fn peer(op: &'static str, rank: usize, world: usize) -> Result<c_int, NcclError> {
    match c_int::try_from(rank) {
        Ok(r) if rank < world => Ok(r),
        _ => Err(NcclError::Rank { op, rank, world }),
    }
}

/// The buffer of a contiguous device view, checked to be on device `ordinal`.
pub fn buffer<T, E, L, S, A>(
    op: &'static str,
    ordinal: i32,
    view: &Mdspan<'_, T, E, L, S, A>,
) -> Result<Buffer, NcclError>
where
    T: NcclElement,
    E: Extents,
    L: CompactLayout,
    S: DeviceMemory,
    A: Access,
{
    if view.space().ordinal() != ordinal {
        return Err(NcclError::WrongDevice {
            op,
            view: view.space().ordinal(),
            communicator: ordinal,
        });
    }
    // A view's span is memory that exists, so its count of lanes fits `usize`.
    let count = view.mapping().required_span_size() * usize::from(T::LANES);
    Ok(Buffer {
        count,
        address: view.data_handle() as usize,
    })
}

/// The input and output of an elementwise collective (`all_reduce`, `reduce`, `broadcast`) have
/// equal extents.
pub fn same_extents<E: Extents, E2: Extents<Index = E::Index>>(
    op: &'static str,
    send: &E,
    recv: &E2,
) -> Result<(), NcclError> {
    let (s, r) = (send.to_array(), recv.to_array());
    if s.as_ref() != r.as_ref() {
        return Err(NcclError::SameExtents {
            op,
            send: s.as_ref().to_vec(),
            recv: r.as_ref().to_vec(),
        });
    }
    Ok(())
}

/// The buffers of an elementwise collective: equal extents, both on device `ordinal`.
pub fn elementwise<T, E, E2, L, S, A, W>(
    op: &'static str,
    ordinal: i32,
    send: &Mdspan<'_, T, E, L, S, A>,
    recv: &Mdspan<'_, T, E2, L, S, W>,
) -> Result<(Buffer, Buffer), NcclError>
where
    T: NcclElement,
    E: Extents,
    E2: Extents<Index = E::Index>,
    L: CompactLayout,
    S: DeviceMemory,
    A: Access,
    W: Access,
{
    same_extents(op, send.extents(), recv.extents())?;
    Ok((buffer(op, ordinal, send)?, buffer(op, ordinal, recv)?))
}

/// The buffers of `all_gather` on a world of `world` ranks: `recv` holds `world` × `send`'s
/// values, both on device `ordinal`.
pub fn all_gather<T, E, E2, L, S, A, W>(
    ordinal: i32,
    world: usize,
    send: &Mdspan<'_, T, E, L, S, A>,
    recv: &Mdspan<'_, T, E2, L, S, W>,
) -> Result<(Buffer, Buffer), NcclError>
where
    T: NcclElement,
    E: Extents,
    E2: Extents,
    L: CompactLayout,
    S: DeviceMemory,
    A: Access,
    W: Access,
{
    let (s, r) = (
        buffer("all_gather", ordinal, send)?,
        buffer("all_gather", ordinal, recv)?,
    );
    match whole_of(s, r, world) {
        true => Ok((s, r)),
        false => Err(NcclError::AllGatherExtents {
            send: send.size(),
            recv: recv.size(),
            world,
        }),
    }
}

/// The buffers of `reduce_scatter` on a world of `world` ranks: `send` holds `world` × `recv`'s
/// values, both on device `ordinal`.
pub fn reduce_scatter<T, E, E2, L, S, A, W>(
    ordinal: i32,
    world: usize,
    send: &Mdspan<'_, T, E, L, S, A>,
    recv: &Mdspan<'_, T, E2, L, S, W>,
) -> Result<(Buffer, Buffer), NcclError>
where
    T: NcclElement,
    E: Extents,
    E2: Extents,
    L: CompactLayout,
    S: DeviceMemory,
    A: Access,
    W: Access,
{
    let op = "reduce_scatter";
    let (s, r) = (buffer(op, ordinal, send)?, buffer(op, ordinal, recv)?);
    match whole_of(r, s, world) {
        true => Ok((s, r)),
        false => Err(NcclError::ReduceScatterExtents {
            send: send.size(),
            recv: recv.size(),
            world,
        }),
    }
}

/// Whether `whole` holds exactly `world` × `part`'s values (no overflow).
fn whole_of(part: Buffer, whole: Buffer, world: usize) -> bool {
    part.count.checked_mul(world) == Some(whole.count)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::{LayoutRight, RightMapping};
    use crate::space::Device;
    use crate::view::{Shared, Unique};
    use crate::{Dims, Mdspan};

    /// A view labelled as on device `ordinal` over `data`: the checks read its mapping and
    /// address, never its elements.
    fn on<A: Access>(
        data: &mut [f32],
        extents: [usize; 2],
        ordinal: i32,
    ) -> Mdspan<'_, f32, Dims<2>, LayoutRight, Device, A> {
        let mapping = RightMapping::new(Dims::new(extents)).unwrap();
        assert!(mapping.required_span_size() <= data.len());
        // SAFETY: `data` holds the span; nothing here reads or writes through the view, whose
        // device label only feeds the checks.
        unsafe { Mdspan::from_raw_parts(data.as_mut_ptr(), mapping, Device::new(ordinal)) }
    }

    #[test]
    fn ranks_and_peers() {
        assert_eq!(ranks(1, 2).unwrap(), (1, 2));
        assert!(matches!(ranks(2, 2), Err(NcclError::World { rank: 2, world: 2 })));
        assert!(matches!(ranks(0, usize::MAX), Err(NcclError::World { .. })));
        assert_eq!(peer("reduce", 0, 1).unwrap(), 0);
        assert!(matches!(
            peer("reduce", usize::MAX, usize::MAX),
            Err(NcclError::Rank { .. })
        ));
    }

    #[test]
    fn buffers_count_values_and_check_the_device() {
        let (mut a, mut b) = (vec![0f32; 12], vec![0f32; 24]);
        let send = on::<Shared>(&mut a, [3, 4], 1);
        let recv = on::<Unique>(&mut b, [6, 4], 1);
        let (s, r) = all_gather(1, 2, &send, &recv).unwrap();
        assert_eq!((s.count, r.count), (12, 24));
        assert_eq!(s.address, send.as_ptr() as usize);
        let (s, r) = reduce_scatter(1, 2, &recv, &send).unwrap();
        assert_eq!((s.count, r.count), (24, 12));
        assert!(matches!(
            all_gather(1, 3, &send, &recv),
            Err(NcclError::AllGatherExtents {
                send: 12,
                recv: 24,
                world: 3
            })
        ));
        assert!(matches!(
            reduce_scatter(1, usize::MAX, &recv, &send),
            Err(NcclError::ReduceScatterExtents { .. })
        ));
        assert!(matches!(
            buffer("send", 0, &send),
            Err(NcclError::WrongDevice {
                view: 1,
                communicator: 0,
                ..
            })
        ));
        assert!(matches!(
            elementwise("all_reduce", 1, &send, &recv),
            Err(NcclError::SameExtents { .. })
        ));
    }
}
