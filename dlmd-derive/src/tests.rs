//! Snapshot tests of what the macros expand to, printed as formatted Rust. A change to the
//! generated code shows up as a diff of `src/snapshots/`: review it, then accept it with
//! `INSTA_UPDATE=always cargo test -p dlmd-derive` (or `cargo insta review`).

use proc_macro2::TokenStream;
use quote::quote;

/// The expansion of `#[derive(DlElement)]` on `item`, formatted.
fn derived(item: TokenStream) -> String {
    let input: syn::DeriveInput = syn::parse2(item).expect("the test input is a struct");
    let output = crate::expand::derive(&input);
    prettyplease::unparse(&syn::parse2(output).expect("the derive expands to items"))
}

/// The expansion of `dlmd!(input)` as `dlmd::dlmd!` calls it, formatted as the body of a
/// function.
fn viewed(input: TokenStream) -> String {
    let output = crate::view::expand(quote!(@crate ::dlmd; #input));
    let item = quote! {
        fn expansion() {
            let view = #output;
        }
    };
    prettyplease::unparse(&syn::parse2(item).expect("`dlmd!` expands to an expression"))
}

#[test]
fn derive_scalar_newtype() {
    insta::assert_snapshot!(derived(quote! {
        #[repr(transparent)]
        struct Meters(f64);
    }));
}

#[test]
fn derive_newtype_with_marker() {
    insta::assert_snapshot!(derived(quote! {
        #[repr(transparent)]
        struct Quantity<U>(f32, ::core::marker::PhantomData<U>);
    }));
}

#[test]
fn derive_generic_newtype() {
    insta::assert_snapshot!(derived(quote! {
        #[repr(transparent)]
        struct Wrap<T>(T);
    }));
}

#[test]
fn derive_vector_struct() {
    insta::assert_snapshot!(derived(quote! {
        #[repr(C)]
        struct Float4 {
            x: f32,
            y: f32,
            z: f32,
            w: f32,
        }
    }));
}

#[test]
fn derive_error_keeps_a_placeholder() {
    insta::assert_snapshot!(derived(quote! {
        struct NoRepr {
            x: f32,
            y: f32,
        }
    }));
}

#[test]
fn view_static() {
    insta::assert_snapshot!(viewed(quote!(&data, [2, 3])));
}

#[test]
fn view_dynamic() {
    insta::assert_snapshot!(viewed(quote!(&mut buf, [rows, _], layout_left)));
}

#[test]
fn view_strided() {
    insta::assert_snapshot!(viewed(quote!(&data, [2, cols], layout_stride, strides = [1, 2])));
}

#[test]
fn view_scalar() {
    insta::assert_snapshot!(viewed(quote!(&x, [])));
}

#[test]
fn view_every_error() {
    insta::assert_snapshot!(viewed(quote!(&data, [_, 3, _], layout_diagonal)));
}
