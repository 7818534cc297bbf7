//! What a launcher takes for each kernel parameter ([`KernelArg`]), and why it refuses a view:
//! a view whose element type, extents, layout, memory space or access differs from the
//! parameter's is refused for that one property, with the parameter's name and what to pass.

use crate::dtype::DlElement;
use crate::exchange::WorkStream;
use crate::extents::Extents;
use crate::kernel::{Footprint, KernelParam};
use crate::layout::Layout;
use crate::managed::ManagedTensor;
use crate::space::MemorySpace;
use crate::view::{Access, Mdspan};
use std::sync::Arc;
use std::thread::ThreadId;

pub(crate) mod sealed {
    pub trait Sealed<P> {}
}

/// What a launch needs to know of one argument besides its parameter form: made only by the
/// argument's [`KernelArg::info`], and read only by the launch.
#[derive(Clone, Copy, Debug)]
#[doc(hidden)]
pub struct ArgInfo<'a> {
    /// The CUDA device its memory is on (see [`KernelParam::device_ordinal`]).
    pub(crate) device: Option<i32>,
    /// The memory it reaches and how (see [`KernelParam::footprint`]).
    pub(crate) footprint: Option<Footprint>,
    /// Where it is imported: the import it comes from.
    pub(crate) held: Option<Producer<'a>>,
}

/// The import an argument comes from, as a launch checks and keeps it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Producer<'a> {
    /// The imported tensor, for the launch to keep until the kernel is done; `None` where the
    /// owner of its memory keeps it for all work queued on its stream
    /// ([`Imported::lent`](super::Imported::lent)).
    pub(crate) tensor: Option<&'a Arc<ManagedTensor>>,
    /// The stream its producer named, the only one the launch may use.
    pub(crate) stream: WorkStream,
    /// Where that is the per-thread default stream (2), the thread whose stream it is.
    pub(crate) thread: Option<ThreadId>,
}

/// A value a launcher takes for the kernel parameter of type `P`: `P` itself (a view borrowed
/// for the launch's scope, an element), or an imported tensor checked as `P`
/// ([`Imported::arg`](super::Imported::arg)). `N` names the parameter in the launcher's
/// messages (`#[dlmd::kernel]` makes a type of the parameter's name for it; `()` elsewhere).
///
/// A view whose type is not `P` is refused for the first property that differs, each with its
/// own message: [`SameElement`], [`SameExtents`], [`SameLayout`], [`SameSpace`],
/// [`SameAccess`].
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be passed for the kernel parameter `{N}` of type `{P}`",
    label = "not a `{P}`",
    note = "pass a value of exactly the parameter's type: an element as itself (`x as f32`), a view of the \
            parameter's element type, extents, layout, memory and access, or an imported tensor checked as one \
            (`imported.arg()?`)"
)]
pub trait KernelArg<P: KernelParam, N = ()>: sealed::Sealed<P> {
    /// The parameter form the kernel receives.
    #[doc(hidden)]
    fn to_param(&self) -> P::Param;

    /// Its device, footprint and import, which the launch checks.
    #[doc(hidden)]
    fn info(&self) -> ArgInfo<'_>;
}

/// The launch's facts of a value passed as itself.
fn info_of<P: KernelParam>(value: &P) -> ArgInfo<'_> {
    ArgInfo {
        device: value.device_ordinal(),
        footprint: value.footprint(),
        held: None,
    }
}

impl<T: DlElement> sealed::Sealed<T> for T {}

/// An element parameter takes an element of its type.
impl<T: DlElement, N> KernelArg<T, N> for T {
    #[inline]
    fn to_param(&self) -> T {
        *self
    }

    #[inline]
    fn info(&self) -> ArgInfo<'_> {
        info_of(self)
    }
}

impl<T, E: Extents, L: Layout, S: MemorySpace, A: Access, P> sealed::Sealed<P> for Mdspan<'_, T, E, L, S, A> {}

/// A view parameter takes a view of its type: each of the five properties the same.
impl<'a, T, E, L, S, A, T2, E2, L2, S2, A2, N> KernelArg<Mdspan<'a, T2, E2, L2, S2, A2>, N>
    for Mdspan<'a, T, E, L, S, A>
where
    T: DlElement + SameElement<T2, N>,
    E: Extents + SameExtents<E2, N>,
    L: Layout + SameLayout<L2, N>,
    S: MemorySpace + SameSpace<S2, N>,
    A: Access + SameAccess<A2, N>,
    T2: DlElement,
    E2: Extents,
    L2: Layout,
    S2: MemorySpace,
    A2: Access,
    Mdspan<'a, T2, E2, L2, S2, A2>: KernelParam,
{
    // The view as the parameter's type, which the five properties' traits show it is (each
    // is implemented for a property and itself only).
    #[inline]
    fn to_param(&self) -> <Mdspan<'a, T2, E2, L2, S2, A2> as KernelParam>::Param {
        KernelParam::to_param(A::same(S::same(L::same(E::same(T::same(self))))))
    }

    #[inline]
    fn info(&self) -> ArgInfo<'_> {
        info_of(A::same(S::same(L::same(E::same(T::same(self))))))
    }
}

/// One of the five properties of a view's type, the same in the argument and the parameter: a
/// trait implemented for each property and itself only, whose message says which property
/// differs, for which parameter (`N`), and what to pass. `same` is the identity, with the
/// property's slot of the view's type renamed.
macro_rules! same_property {
    (
        $(#[$doc:meta])*
        $name:ident<$other:ident>: $bound:ident,
        fn same<$($lt:lifetime),*, $($generic:ident: $generic_bound:ident),*>(view: &$v:lifetime $from:ty) -> $to:ty;
        message = $message:literal,
        note = $note:literal $(,)?
    ) => {
        $(#[$doc])*
        #[diagnostic::on_unimplemented(
            message = $message,
            label = "the parameter `{N}` takes `{Other}`",
            note = $note
        )]
        pub trait $name<$other: $bound, N>: $bound {
            /// The view, as one whose property is `Other`: itself.
            #[doc(hidden)]
            fn same<$($lt),*, $($generic: $generic_bound),*>(view: &$v $from) -> $to;
        }

        impl<$other: $bound, N> $name<$other, N> for $other {
            #[inline(always)]
            fn same<$($lt),*, $($generic: $generic_bound),*>(view: &$v $from) -> $to {
                view
            }
        }
    };
}

same_property!(
    /// The argument's element type is the parameter's.
    SameElement<Other>: DlElement,
    fn same<'v, 'a, E: Extents, L: Layout, S: MemorySpace, A: Access>(view: &'v Mdspan<'a, Self, E, L, S, A>)
        -> &'v Mdspan<'a, Other, E, L, S, A>;
    message = "the argument for the kernel parameter `{N}` has elements of type `{Self}`, the parameter `{Other}`",
    note = "a kernel reads memory as the element type it declares: convert the data first, or declare the parameter \
            over `{Self}`",
);

same_property!(
    /// The argument's extents (rank and static extents) are the parameter's.
    SameExtents<Other>: Extents,
    fn same<'v, 'a, T: DlElement, L: Layout, S: MemorySpace, A: Access>(view: &'v Mdspan<'a, T, Self, L, S, A>)
        -> &'v Mdspan<'a, T, Other, L, S, A>;
    message = "the argument for the kernel parameter `{N}` has extents `{Self}`, the parameter `{Other}`",
    note = "the rank and every static extent (`Const<N>`) must be the parameter's: `view.try_into_extents()` \
            checks a view's extents as the parameter's, and `submdspan` takes a view of lower rank",
);

same_property!(
    /// The argument's layout is the parameter's.
    SameLayout<Other>: Layout,
    fn same<'v, 'a, T: DlElement, E: Extents, S: MemorySpace, A: Access>(view: &'v Mdspan<'a, T, E, Self, S, A>)
        -> &'v Mdspan<'a, T, E, Other, S, A>;
    message = "the argument for the kernel parameter `{N}` has the layout `{Self}`, the parameter `{Other}`",
    note = "a kernel computes offsets with the layout it declares: declare the parameter with the argument's \
            layout (`LayoutStride` takes any strides), or copy the data into the parameter's",
);

same_property!(
    /// The argument's memory space is the parameter's.
    SameSpace<Other>: MemorySpace,
    fn same<'v, 'a, T: DlElement, E: Extents, L: Layout, A: Access>(view: &'v Mdspan<'a, T, E, L, Self, A>)
        -> &'v Mdspan<'a, T, E, L, Other, A>;
    message = "the argument for the kernel parameter `{N}` is in `{Self}` memory, the parameter in `{Other}` memory",
    note = "the GPU reaches device and managed memory only, and a parameter takes the space it declares: copy \
            host data to the device first (`gpu.to_device(&data, extents)`, `Scope::copy`); a managed view \
            becomes a device one with `view.into_space(Device::new(ordinal))`",
);

same_property!(
    /// The argument's access is the parameter's.
    SameAccess<Other>: Access,
    fn same<'v, 'a, T: DlElement, E: Extents, L: Layout, S: MemorySpace>(view: &'v Mdspan<'a, T, E, L, S, Self>)
        -> &'v Mdspan<'a, T, E, L, S, Other>;
    message = "the argument for the kernel parameter `{N}` has `{Self}` access, the parameter `{Other}` access",
    note = "a kernel writes a `Unique` parameter and only reads a `Shared` one: pass `view.as_view_mut()` where it \
            writes and `view.as_view()` where it reads; views of memory others share (`Aliased`, `AliasedMut`) \
            are passed as imported tensors, checked with `imported.arg()?`",
);
