//! The collectives and point-to-point calls of a [`Communicator`]: each checks its views
//! ([`check`]) before NCCL is called, and queues its work inside a [`Scope`].

use super::runtime::call;
use super::{Communicator, NcclElement, NcclError, ReduceOp, check};
use crate::cuda::{DeviceMemory, Scope};
use crate::extents::Extents;
use crate::kernel::Use;
use crate::layout::CompactLayout;
use crate::view::{Access, Mdspan, WriteAccess};
use cudarc::nccl::sys;
use std::ffi::c_void;

impl Communicator {
    /// Reduces `send` over all ranks with `op` into every rank's `recv` (of the same extents).
    #[allow(clippy::too_many_arguments)]
    pub fn all_reduce<'scope, 'v, 'w, T, E, E2, L, S, A, W>(
        &self,
        scope: &Scope<'scope, '_>,
        send: &'scope Mdspan<'v, T, E, L, S, A>,
        recv: &'scope mut Mdspan<'w, T, E2, L, S, W>,
        op: ReduceOp,
    ) -> Result<(), NcclError>
    where
        'v: 'scope,
        'w: 'scope,
        T: NcclElement,
        E: Extents,
        E2: Extents<Index = E::Index>,
        L: CompactLayout,
        S: DeviceMemory,
        W: WriteAccess,
        A: Access,
    {
        const OP: &str = "all_reduce";
        let (s, r) = check::elementwise(OP, self.ordinal(), send, recv)?;
        self.queue::<T>(scope, OP, &[(s, Use::Read), (r, Use::Write)], |stream| {
            // SAFETY: `send` and `recv` are contiguous spans of `s.count` values of the type on
            // this rank's device, alive until the scope ends (which waits for the event recorded
            // after the collective: `queue`); `recv` is borrowed exclusively.
            call(OP, Some(self.comm()), || unsafe {
                sys::ncclAllReduce(
                    s.address as *const c_void,
                    r.address as *mut c_void,
                    s.count,
                    T::DATA_TYPE.to_sys(),
                    op.to_sys(),
                    self.comm(),
                    stream,
                )
            })
        })
    }

    /// [`all_reduce`](Self::all_reduce) with `buf` as both input and output.
    pub fn all_reduce_in_place<'scope, 'w, T, E, L, S, W>(
        &self,
        scope: &Scope<'scope, '_>,
        buf: &'scope mut Mdspan<'w, T, E, L, S, W>,
        op: ReduceOp,
    ) -> Result<(), NcclError>
    where
        'w: 'scope,
        T: NcclElement,
        E: Extents,
        L: CompactLayout,
        S: DeviceMemory,
        W: WriteAccess,
    {
        const OP: &str = "all_reduce_in_place";
        let b = check::buffer(OP, self.ordinal(), buf)?;
        self.queue::<T>(scope, OP, &[(b, Use::Write)], |stream| {
            // SAFETY: as in `all_reduce`, with one buffer, which NCCL allows.
            call(OP, Some(self.comm()), || unsafe {
                sys::ncclAllReduce(
                    b.address as *const c_void,
                    b.address as *mut c_void,
                    b.count,
                    T::DATA_TYPE.to_sys(),
                    op.to_sys(),
                    self.comm(),
                    stream,
                )
            })
        })
    }

    /// Reduces `send` over all ranks with `op` into `recv` on rank `root` (the other ranks'
    /// `recv` is not written, but must have the same extents).
    #[allow(clippy::too_many_arguments)]
    pub fn reduce<'scope, 'v, 'w, T, E, E2, L, S, A, W>(
        &self,
        scope: &Scope<'scope, '_>,
        send: &'scope Mdspan<'v, T, E, L, S, A>,
        recv: &'scope mut Mdspan<'w, T, E2, L, S, W>,
        op: ReduceOp,
        root: usize,
    ) -> Result<(), NcclError>
    where
        'v: 'scope,
        'w: 'scope,
        T: NcclElement,
        E: Extents,
        E2: Extents<Index = E::Index>,
        L: CompactLayout,
        S: DeviceMemory,
        W: WriteAccess,
        A: Access,
    {
        const OP: &str = "reduce";
        let root = self.peer(OP, root)?;
        let (s, r) = check::elementwise(OP, self.ordinal(), send, recv)?;
        self.queue::<T>(scope, OP, &[(s, Use::Read), (r, Use::Write)], |stream| {
            // SAFETY: as in `all_reduce`; `root` is a rank of the communicator.
            call(OP, Some(self.comm()), || unsafe {
                sys::ncclReduce(
                    s.address as *const c_void,
                    r.address as *mut c_void,
                    s.count,
                    T::DATA_TYPE.to_sys(),
                    op.to_sys(),
                    root,
                    self.comm(),
                    stream,
                )
            })
        })
    }

    /// Copies `send` of rank `root` into every rank's `recv` (of the same extents); `send` is
    /// read on `root` only.
    pub fn broadcast<'scope, 'v, 'w, T, E, E2, L, S, A, W>(
        &self,
        scope: &Scope<'scope, '_>,
        send: &'scope Mdspan<'v, T, E, L, S, A>,
        recv: &'scope mut Mdspan<'w, T, E2, L, S, W>,
        root: usize,
    ) -> Result<(), NcclError>
    where
        'v: 'scope,
        'w: 'scope,
        T: NcclElement,
        E: Extents,
        E2: Extents<Index = E::Index>,
        L: CompactLayout,
        S: DeviceMemory,
        W: WriteAccess,
        A: Access,
    {
        const OP: &str = "broadcast";
        let root = self.peer(OP, root)?;
        let (s, r) = check::elementwise(OP, self.ordinal(), send, recv)?;
        self.queue::<T>(scope, OP, &[(s, Use::Read), (r, Use::Write)], |stream| {
            // SAFETY: as in `reduce`.
            call(OP, Some(self.comm()), || unsafe {
                sys::ncclBroadcast(
                    s.address as *const c_void,
                    r.address as *mut c_void,
                    s.count,
                    T::DATA_TYPE.to_sys(),
                    root,
                    self.comm(),
                    stream,
                )
            })
        })
    }

    /// [`broadcast`](Self::broadcast) with `buf` as both input (on `root`) and output.
    pub fn broadcast_in_place<'scope, 'w, T, E, L, S, W>(
        &self,
        scope: &Scope<'scope, '_>,
        buf: &'scope mut Mdspan<'w, T, E, L, S, W>,
        root: usize,
    ) -> Result<(), NcclError>
    where
        'w: 'scope,
        T: NcclElement,
        E: Extents,
        L: CompactLayout,
        S: DeviceMemory,
        W: WriteAccess,
    {
        const OP: &str = "broadcast_in_place";
        let root = self.peer(OP, root)?;
        let b = check::buffer(OP, self.ordinal(), buf)?;
        self.queue::<T>(scope, OP, &[(b, Use::Write)], |stream| {
            // SAFETY: as in `broadcast`, with one buffer, which NCCL allows.
            call(OP, Some(self.comm()), || unsafe {
                sys::ncclBroadcast(
                    b.address as *const c_void,
                    b.address as *mut c_void,
                    b.count,
                    T::DATA_TYPE.to_sys(),
                    root,
                    self.comm(),
                    stream,
                )
            })
        })
    }

    /// Gathers every rank's `send` into every rank's `recv`, in rank order: `recv` holds world
    /// size × `send`'s elements (a leading extent of the world size, in a row-major layout).
    pub fn all_gather<'scope, 'v, 'w, T, E, E2, L, S, A, W>(
        &self,
        scope: &Scope<'scope, '_>,
        send: &'scope Mdspan<'v, T, E, L, S, A>,
        recv: &'scope mut Mdspan<'w, T, E2, L, S, W>,
    ) -> Result<(), NcclError>
    where
        'v: 'scope,
        'w: 'scope,
        T: NcclElement,
        E: Extents,
        E2: Extents,
        L: CompactLayout,
        S: DeviceMemory,
        W: WriteAccess,
        A: Access,
    {
        const OP: &str = "all_gather";
        let (s, r) = check::all_gather(self.ordinal(), self.world_size(), send, recv)?;
        self.queue::<T>(scope, OP, &[(s, Use::Read), (r, Use::Write)], |stream| {
            // SAFETY: `send` holds `s.count` values and `recv` world × as many (checked), contiguous
            // on this rank's device, alive until the scope ends; `recv` is borrowed exclusively.
            call(OP, Some(self.comm()), || unsafe {
                sys::ncclAllGather(
                    s.address as *const c_void,
                    r.address as *mut c_void,
                    s.count,
                    T::DATA_TYPE.to_sys(),
                    self.comm(),
                    stream,
                )
            })
        })
    }

    /// Reduces `send` over all ranks with `op` and scatters the result: rank `i`'s `recv` gets
    /// the `i`-th of world size equal parts. `send` holds world size × `recv`'s elements.
    pub fn reduce_scatter<'scope, 'v, 'w, T, E, E2, L, S, A, W>(
        &self,
        scope: &Scope<'scope, '_>,
        send: &'scope Mdspan<'v, T, E, L, S, A>,
        recv: &'scope mut Mdspan<'w, T, E2, L, S, W>,
        op: ReduceOp,
    ) -> Result<(), NcclError>
    where
        'v: 'scope,
        'w: 'scope,
        T: NcclElement,
        E: Extents,
        E2: Extents,
        L: CompactLayout,
        S: DeviceMemory,
        W: WriteAccess,
        A: Access,
    {
        const OP: &str = "reduce_scatter";
        let (s, r) = check::reduce_scatter(self.ordinal(), self.world_size(), send, recv)?;
        self.queue::<T>(scope, OP, &[(s, Use::Read), (r, Use::Write)], |stream| {
            // SAFETY: `recv` holds `r.count` values and `send` world × as many (checked), as in
            // `all_gather`.
            call(OP, Some(self.comm()), || unsafe {
                sys::ncclReduceScatter(
                    s.address as *const c_void,
                    r.address as *mut c_void,
                    r.count,
                    T::DATA_TYPE.to_sys(),
                    op.to_sys(),
                    self.comm(),
                    stream,
                )
            })
        })
    }

    /// Sends `view` to rank `peer`, which receives it with [`recv`](Self::recv) into a view of
    /// as many elements. Pair sends and receives that wait for each other in a [`group`](super::group).
    pub fn send<'scope, 'v, T, E, L, S, A>(
        &self,
        scope: &Scope<'scope, '_>,
        view: &'scope Mdspan<'v, T, E, L, S, A>,
        peer: usize,
    ) -> Result<(), NcclError>
    where
        'v: 'scope,
        T: NcclElement,
        E: Extents,
        L: CompactLayout,
        S: DeviceMemory,
        A: Access,
    {
        const OP: &str = "send";
        let peer = self.peer(OP, peer)?;
        let s = check::buffer(OP, self.ordinal(), view)?;
        self.queue::<T>(scope, OP, &[(s, Use::Read)], |stream| {
            // SAFETY: `view` is a contiguous span of `s.count` values on this rank's device, alive
            // until the scope ends; `peer` is a rank of the communicator.
            call(OP, Some(self.comm()), || unsafe {
                sys::ncclSend(
                    s.address as *const c_void,
                    s.count,
                    T::DATA_TYPE.to_sys(),
                    peer,
                    self.comm(),
                    stream,
                )
            })
        })
    }

    /// Receives into `view` what rank `peer` sends with [`send`](Self::send).
    pub fn recv<'scope, 'w, T, E, L, S, W>(
        &self,
        scope: &Scope<'scope, '_>,
        view: &'scope mut Mdspan<'w, T, E, L, S, W>,
        peer: usize,
    ) -> Result<(), NcclError>
    where
        'w: 'scope,
        T: NcclElement,
        E: Extents,
        L: CompactLayout,
        S: DeviceMemory,
        W: WriteAccess,
    {
        const OP: &str = "recv";
        let peer = self.peer(OP, peer)?;
        let r = check::buffer(OP, self.ordinal(), view)?;
        self.queue::<T>(scope, OP, &[(r, Use::Write)], |stream| {
            // SAFETY: as in `send`; `view` is borrowed exclusively.
            call(OP, Some(self.comm()), || unsafe {
                sys::ncclRecv(
                    r.address as *mut c_void,
                    r.count,
                    T::DATA_TYPE.to_sys(),
                    peer,
                    self.comm(),
                    stream,
                )
            })
        })
    }
}
