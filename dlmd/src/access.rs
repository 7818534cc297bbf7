//! How a view reaches its elements, in its type: by reference ([`Shared`], [`Unique`]), by value
//! for memory others may write meanwhile ([`Aliased`], [`AliasedMut`]), or through atomic
//! operations in a kernel ([`Atomic`]). The markers and their capability traits live here, apart
//! from the views that carry them, so that memory spaces and views both name them without
//! naming each other.

use core::fmt;

mod sealed {
    pub trait Sealed {}
}

/// How a view reaches its elements: [`Shared`] and [`Unique`] lend references (`&T`,
/// `&mut T`), [`Aliased`] and [`AliasedMut`] copy values in and out, for memory others may
/// write meanwhile.
pub trait Access: Copy + fmt::Debug + 'static + sealed::Sealed {
    /// Whether the view may write through its pointer.
    const MUTABLE: bool;
    /// The access's name, for messages and a kernel's signature digest.
    #[doc(hidden)]
    const NAME: &'static str;
    /// Whether others share the memory ([`Aliased`], [`AliasedMut`]): its bytes are theirs, and
    /// checked only where the host can read them.
    #[doc(hidden)]
    const ALIASED: bool = false;
    /// The access of a read-only view borrowed from this one: [`Shared`] for reference views,
    /// [`Aliased`] for aliased ones (a borrow never promises more than its source).
    type ReadOnly: CopyAccess;
}

/// Access whose views lend references to their elements: [`Shared`] and [`Unique`]. Such a
/// view promises that nothing else writes its elements while it lives, so `&T` stays valid.
#[diagnostic::on_unimplemented(
    message = "a view with `{Self}` access lends no references to its elements and stays on its thread",
    label = "others may write this memory while the view lives",
    note = "copy elements in and out with `load`/`store`, or, where nothing else can reach the memory, call the `unsafe` `assume_unaliased`/`assume_unique`"
)]
pub trait RefAccess: Access {}

/// Access whose views may write their elements: [`Unique`] and [`AliasedMut`]. Device work
/// (peer copies, collectives) writes through either.
#[diagnostic::on_unimplemented(
    message = "a view with `{Self}` access is read-only",
    label = "this view cannot be written",
    note = "write through a `Unique` view (a `*Mut` alias) or an `AliasedMut` one"
)]
pub trait WriteAccess: Access {}

impl WriteAccess for Unique {}

/// Access whose views are `Copy`: [`Shared`], [`Aliased`] and [`AliasedMut`].
pub trait CopyAccess: Access {}

/// Read-only access: the view is `Copy`, and many may alias.
#[derive(Clone, Copy, Debug)]
pub enum Shared {}

/// Read-write access: the view is the only way to its elements while it lives, and no two of its
/// indices reach the same element.
#[derive(Clone, Copy, Debug)]
pub enum Unique {}

/// Read-write access through atomic operations only: the threads of a kernel may all update one
/// element at once (sums, histograms), through [`Thread`](crate::kernel::Thread)'s atomic
/// additions. The view is `Copy`, and on the host neither `Send` nor `Sync`.
#[derive(Clone, Copy, Debug)]
pub enum Atomic {}

impl sealed::Sealed for Shared {}
impl sealed::Sealed for Unique {}
impl sealed::Sealed for Atomic {}
impl Access for Atomic {
    const NAME: &'static str = "atomic";
    const MUTABLE: bool = true;
    type ReadOnly = Aliased;
}
impl CopyAccess for Atomic {}
impl Access for Shared {
    const NAME: &'static str = "shared";
    const MUTABLE: bool = false;
    type ReadOnly = Shared;
}
impl Access for Unique {
    const NAME: &'static str = "unique";
    const MUTABLE: bool = true;
    type ReadOnly = Shared;
}
impl RefAccess for Shared {}
impl RefAccess for Unique {}
impl CopyAccess for Shared {}

/// Read-only access by value to memory others may write: loads copy elements out, and no
/// reference to an element is ever lent. The view is `Copy` but neither `Send` nor `Sync`.
#[derive(Clone, Copy, Debug)]
pub enum Aliased {}

/// Read-write access by value to memory others may read and write, like `&[Cell<T>]`: loads and
/// stores take `&self`, the view is `Copy` but neither `Send` nor `Sync`.
#[derive(Clone, Copy, Debug)]
pub enum AliasedMut {}

impl sealed::Sealed for Aliased {}
impl sealed::Sealed for AliasedMut {}
impl Access for Aliased {
    const ALIASED: bool = true;
    const NAME: &'static str = "aliased";
    const MUTABLE: bool = false;
    type ReadOnly = Aliased;
}
impl Access for AliasedMut {
    const ALIASED: bool = true;
    const NAME: &'static str = "aliased_mut";
    const MUTABLE: bool = true;
    type ReadOnly = Aliased;
}
impl CopyAccess for Aliased {}
impl CopyAccess for AliasedMut {}
impl WriteAccess for AliasedMut {}

/// [`Aliased`] and [`AliasedMut`]: access that lends no references.
pub trait AliasedAccess: CopyAccess {}
impl AliasedAccess for Aliased {}
impl AliasedAccess for AliasedMut {}
