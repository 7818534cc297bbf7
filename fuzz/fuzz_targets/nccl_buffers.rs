//! NCCL's buffer checks (`dlmd::nccl::check`): device tensors of any extents, imported as the
//! contiguous views collectives take, on any device, against any world size and rank. Oracles,
//! in `u128`: a buffer holds elements × lanes values at the view's address; `all_gather` and
//! `reduce_scatter` accept exactly when one side holds world size × the other (never through an
//! overflow); elementwise collectives exactly when the extents are equal; a view on another
//! device than the communicator is refused first; ranks and peers are below the world size and
//! fit NCCL's `int`.
#![no_main]

use arbitrary::Arbitrary;
use dlmd::dlpack::DLDeviceType;
use dlmd::layout::CompactLayout;
use dlmd::nccl::{NcclElement, NcclError, check};
use dlmd::view::Shared;
use dlmd::{Device, Dims, Extents, LayoutLeft, LayoutRight, Mdspan};
use dlmd_fuzz::{Built, TensorFields};
use half::bf16;

#[derive(Arbitrary, Debug)]
struct Input {
    send_rank: u8,
    recv_rank: u8,
    layout: bool,
    element: u8,
    ordinal: i8,
    world: World,
    rank: usize,
    send: TensorFields,
    recv: TensorFields,
}

/// A world size: mostly small, sometimes anything.
#[derive(Arbitrary, Debug, Clone, Copy)]
enum World {
    Small(u8),
    Any(usize),
}

type View<'a, T, const R: usize, L> = Mdspan<'a, T, Dims<R>, L, Device, Shared>;

fn import<T: NcclElement, const R: usize, L: CompactLayout>(built: &Built) -> Option<View<'_, T, R, L>>
where
    T::Storage: dlmd::dtype::PlainStorage,
{
    // SAFETY: the tensor points into `built`, alive for the view; device views are never read
    // on the host, and nothing here reads or writes through them.
    unsafe { Mdspan::from_dlpack(&built.tensor) }.ok()
}

/// The values a view holds, as NCCL counts them.
fn values<T: NcclElement, const R: usize, L: CompactLayout>(view: &View<'_, T, R, L>) -> u128 {
    view.extents().to_array().iter().map(|&n| n as u128).product::<u128>() * u128::from(T::LANES)
}

fn run<T, const S: usize, const Q: usize, L>(input: &Input)
where
    T: NcclElement,
    T::Storage: dlmd::dtype::PlainStorage,
    L: CompactLayout,
{
    let (send_built, recv_built) = (
        input.send.build::<T>(S, DLDeviceType::CUDA),
        input.recv.build::<T>(Q, DLDeviceType::CUDA),
    );
    let (Some(send), Some(recv)) = (import::<T, S, L>(&send_built), import::<T, Q, L>(&recv_built)) else {
        return;
    };
    let world = match input.world {
        World::Small(n) => usize::from(n % 9),
        World::Any(n) => n,
    };
    let ordinal = i32::from(input.ordinal % 3);
    let on_ordinal = send.space().ordinal() == ordinal && recv.space().ordinal() == ordinal;
    let (s, r) = (values(&send), values(&recv));

    match check::buffer("send", ordinal, &send) {
        Ok(b) => {
            assert_eq!(send.space().ordinal(), ordinal, "a view on another device accepted");
            assert_eq!(b.count as u128, s);
            assert_eq!(b.address, send.data_handle() as usize);
        }
        Err(NcclError::WrongDevice { view, communicator, .. }) => {
            assert_eq!((view, communicator), (send.space().ordinal(), ordinal));
            assert_ne!(view, communicator);
        }
        Err(e) => panic!("buffer refused with {e}"),
    }

    let gathered = check::all_gather(ordinal, world, &send, &recv);
    let scattered = check::reduce_scatter(ordinal, world, &send, &recv);
    for (result, part, whole) in [(gathered, s, r), (scattered, r, s)] {
        match result {
            Ok((a, b)) => {
                assert!(on_ordinal, "a view on another device accepted");
                assert_eq!(part * world as u128, whole, "sizes that do not fit accepted");
                assert_eq!((a.count as u128, b.count as u128), (s, r));
            }
            Err(NcclError::WrongDevice { .. }) => assert!(!on_ordinal),
            Err(NcclError::AllGatherExtents {
                send: n,
                recv: m,
                world: w,
            })
            | Err(NcclError::ReduceScatterExtents {
                send: n,
                recv: m,
                world: w,
            }) => {
                assert!(on_ordinal);
                assert_eq!((n, m, w), (send.size(), recv.size(), world));
                assert_ne!(part * world as u128, whole, "sizes that fit refused");
            }
            Err(e) => panic!("refused with {e}"),
        }
    }

    if S == Q {
        let same = send.extents().to_array().as_ref() == recv.extents().to_array().as_ref();
        // Equal ranks: compare as views of one extents type.
        let recv = recv_built.tensor;
        // SAFETY: as in `import`.
        if let Ok(recv) = unsafe { Mdspan::<T, Dims<S>, L, Device, Shared>::from_dlpack(&recv) } {
            match check::elementwise("all_reduce", ordinal, &send, &recv) {
                Ok((a, b)) => {
                    assert!(same && on_ordinal);
                    assert_eq!(a.count, b.count);
                }
                Err(NcclError::SameExtents { send: x, recv: y, .. }) => {
                    assert!(!same);
                    assert_ne!(x, y);
                }
                Err(NcclError::WrongDevice { .. }) => assert!(same && !on_ordinal),
                Err(e) => panic!("refused with {e}"),
            }
        }
    }

    let rank = input.rank;
    let fits = |n: usize| i32::try_from(n).is_ok();
    match check::ranks(rank, world) {
        Ok((r, w)) => {
            assert!(rank < world && fits(world));
            assert_eq!((r as usize, w as usize), (rank, world));
        }
        Err(NcclError::World { .. }) => assert!(rank >= world || !fits(world)),
        Err(e) => panic!("ranks refused with {e}"),
    }
    match check::peer("send", rank, world) {
        Ok(p) => {
            assert!(rank < world);
            assert_eq!(p as usize, rank);
        }
        Err(NcclError::Rank { rank: r, world: w, .. }) => {
            assert_eq!((r, w), (rank, world));
            assert!(rank >= world || !fits(rank));
        }
        Err(e) => panic!("peer refused with {e}"),
    }
}

fn with_ranks<T, L>(input: &Input)
where
    T: NcclElement,
    T::Storage: dlmd::dtype::PlainStorage,
    L: CompactLayout,
{
    match (input.send_rank % 3, input.recv_rank % 3) {
        (0, 0) => run::<T, 0, 0, L>(input),
        (0, 1) => run::<T, 0, 1, L>(input),
        (0, _) => run::<T, 0, 2, L>(input),
        (1, 0) => run::<T, 1, 0, L>(input),
        (1, 1) => run::<T, 1, 1, L>(input),
        (1, _) => run::<T, 1, 2, L>(input),
        (_, 0) => run::<T, 2, 0, L>(input),
        (_, 1) => run::<T, 2, 1, L>(input),
        _ => run::<T, 2, 2, L>(input),
    }
}

fn with_layout<T>(input: &Input)
where
    T: NcclElement,
    T::Storage: dlmd::dtype::PlainStorage,
{
    match input.layout {
        false => with_ranks::<T, LayoutRight>(input),
        true => with_ranks::<T, LayoutLeft>(input),
    }
}

dlmd_fuzz::fuzz_cases!(|input: Input| {
    match input.element % 3 {
        0 => with_layout::<f32>(&input),
        1 => with_layout::<u8>(&input),
        _ => with_layout::<[bf16; 2]>(&input),
    }
});
