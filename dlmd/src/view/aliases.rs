//! The usual names of views: a memory space and an access, with the layout right by default.

use super::Mdspan;
use crate::access::{Aliased, AliasedMut, Atomic, Shared, Unique};
use crate::layout::LayoutRight;
use crate::space::{Device, Host, Managed};

/// A read-only view of host memory.
pub type HostMdspan<'a, T, E, L = LayoutRight> = Mdspan<'a, T, E, L, Host, Shared>;
/// A read-write view of host memory.
pub type HostMdspanMut<'a, T, E, L = LayoutRight> = Mdspan<'a, T, E, L, Host, Unique>;
/// A read-only view of CUDA device memory.
pub type DeviceMdspan<'a, T, E, L = LayoutRight> = Mdspan<'a, T, E, L, Device, Shared>;
/// A read-write view of CUDA device memory.
pub type DeviceMdspanMut<'a, T, E, L = LayoutRight> = Mdspan<'a, T, E, L, Device, Unique>;
/// A view of CUDA device memory whose elements a kernel's threads update atomically
/// ([`Atomic`]).
pub type DeviceMdspanAtomic<'a, T, E, L = LayoutRight> = Mdspan<'a, T, E, L, Device, Atomic>;
/// A read-only view of CUDA managed memory.
pub type ManagedMdspan<'a, T, E, L = LayoutRight> = Mdspan<'a, T, E, L, Managed, Shared>;
/// A read-write view of CUDA managed memory.
pub type ManagedMdspanMut<'a, T, E, L = LayoutRight> = Mdspan<'a, T, E, L, Managed, Unique>;
/// A read-only view of memory on a device of kind `K` that the host never touches
/// ([`Opaque`](crate::space::Opaque)).
pub type OpaqueMdspan<'a, T, E, K, L = LayoutRight> = Mdspan<'a, T, E, L, crate::space::Opaque<K>, Shared>;
/// A read-write view of memory on a device of kind `K` that the host never touches.
pub type OpaqueMdspanMut<'a, T, E, K, L = LayoutRight> = Mdspan<'a, T, E, L, crate::space::Opaque<K>, Unique>;
/// A read-only view of host memory that others may write meanwhile.
pub type HostMdspanAliased<'a, T, E, L = LayoutRight> = Mdspan<'a, T, E, L, Host, Aliased>;
/// A read-write view of host memory that others may read and write meanwhile.
pub type HostMdspanAliasedMut<'a, T, E, L = LayoutRight> = Mdspan<'a, T, E, L, Host, AliasedMut>;
