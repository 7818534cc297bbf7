//! Procedural macros of [dlmd](https://docs.rs/dlmd): `#[derive(DlElement)]`, `dlmd!` and
//! `#[dlmd::kernel]` with `#[dlmd::device]`.
//!
//! Use them through the `dlmd` crate, which re-exports them; this crate's version is pinned by
//! `dlmd` and the two are released together.
#![deny(
    missing_docs,
    unsafe_op_in_unsafe_fn,
    clippy::undocumented_unsafe_blocks,
    clippy::missing_safety_doc
)]

mod device;
mod element;
mod kernel;
mod options;
#[cfg(test)]
mod tests;
mod view;

use proc_macro::TokenStream;
use syn::{DeriveInput, parse_macro_input};

/// Derives `dlmd::DlElement`; documented on the re-export in `dlmd`.
#[proc_macro_derive(DlElement, attributes(dlmd))]
pub fn derive_dl_element(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    element::derive(&input).into()
}

/// Builds a host view; documented on the re-export in `dlmd`.
#[proc_macro]
pub fn dlmd(input: TokenStream) -> TokenStream {
    view::expand(input.into()).into()
}

/// Makes a function a GPU kernel and its typed launcher; documented on the re-export in `dlmd`.
#[proc_macro_attribute]
pub fn kernel(args: TokenStream, item: TokenStream) -> TokenStream {
    kernel::expand(args.into(), item.into()).into()
}

/// Keeps an item for kernels (and host builds that type-check them); documented on the
/// re-export in `dlmd`.
#[proc_macro_attribute]
pub fn device(args: TokenStream, item: TokenStream) -> TokenStream {
    device::expand(args.into(), item.into()).into()
}
