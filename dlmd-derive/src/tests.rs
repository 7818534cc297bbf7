//! Snapshot tests of what the macros expand to, printed as formatted Rust. A change to the
//! generated code shows up as a diff of `src/snapshots/`: review it, then accept it with
//! `INSTA_UPDATE=always cargo test -p dlmd-derive` (or `cargo insta review`). `#[dlmd::kernel]`
//! is snapshot once per target: the PTX entry point a build for `nvptx64` sees, and the launcher
//! the host sees.

use proc_macro2::TokenStream;
use quote::quote;
use syn::visit_mut::VisitMut;

/// The expansion of `#[derive(DlElement)]` on `item`, formatted.
fn derived(item: TokenStream) -> String {
    let input: syn::DeriveInput = syn::parse2(item).expect("the test input is a struct");
    let output = crate::element::derive(&input);
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

/// The expansion of `#[dlmd::kernel(args)] item`, formatted and split by target: what a build
/// for `nvptx64` sees (the PTX entry point, its signature digest and launch bounds), and what
/// the host sees (the digest it compares, the launcher, and the body that a build with
/// `--cfg dlmd_kernel_check` type-checks).
fn kernel(args: TokenStream, item: TokenStream) -> (String, String) {
    let output = crate::kernel::expand(args, item);
    let file: syn::File = syn::parse2(output).expect("`#[dlmd::kernel]` expands to items");
    let for_host = |item: &syn::Item| {
        let attrs = match item {
            syn::Item::Fn(f) => &f.attrs,
            syn::Item::Static(s) => &s.attrs,
            syn::Item::Const(c) => &c.attrs,
            syn::Item::Struct(s) => &s.attrs,
            syn::Item::Mod(m) => &m.attrs,
            // The body's copy for host builds that type-check kernels (`dlmd::__device!`).
            syn::Item::Macro(m) => &m.attrs,
            other => panic!("unexpected item in the expansion: {}", quote!(#other)),
        };
        // The arguments struct and the options' assertions are the same on both targets:
        // shown with the host's items.
        let Some(cfg) = attrs
            .iter()
            .find(|a| a.path().is_ident("cfg"))
            .map(|a| quote!(#a).to_string())
        else {
            assert!(
                matches!(item, syn::Item::Struct(_) | syn::Item::Const(_)),
                "every other item is for one target"
            );
            return true;
        };
        assert!(cfg.contains("nvptx64"), "{cfg}");
        cfg.contains("not")
    };
    let (host, gpu): (Vec<_>, Vec<_>) = file.items.into_iter().partition(for_host);
    let unparse = |items| {
        prettyplease::unparse(&syn::File {
            shebang: None,
            attrs: Vec::new(),
            items,
        })
    };
    (unparse(gpu), unparse(host))
}

#[test]
fn kernel_element_wise() {
    let (gpu, host) = kernel(
        quote!(),
        quote! {
            /// `y = a x + y`.
            pub fn saxpy(thread: Thread, a: f32, x: DeviceMdspan<'_, f32, Dims<1>>, mut y: DeviceMdspanMut<'_, f32, Dims<1>>) {
                thread.for_each_mut(&mut y, |[i], v| *v += a * x[[i]]);
            }
        },
    );
    insta::assert_snapshot!("kernel_element_wise_gpu", gpu);
    insta::assert_snapshot!("kernel_element_wise_host", host);
}

#[test]
fn kernel_with_two_parameters_of_one_type_takes_them_by_name() {
    let (_, host) = kernel(
        quote!(),
        quote! {
            pub fn add_rows(thread: Thread, a: DeviceMdspan<'_, f32, Dims<2>>, b: DeviceMdspan<'_, f32, Dims<2>>, mut c: DeviceMdspanMut<'_, f32, Dims<2>>) {
                thread.for_each_mut(&mut c, |i, v| *v = a[i] + b[i]);
            }
        },
    );
    insta::assert_snapshot!("kernel_named_arguments_host", host);
}

#[test]
fn kernel_cooperative_with_launch_bounds() {
    let (gpu, host) = kernel(
        quote!(crate = my::dlmd, min_blocks_per_sm = 2),
        quote! {
            pub fn reverse(block: Block<'_, 256, Tile, (Const<256>,)>, out: DeviceMdspanMut<'_, u32, Dims<1>>) {
                let (mut block, tile) = block.split();
                let written = block.write(tile, |[i]| i as u32);
                let readable = block.sync(written);
                for chunk in block.chunks(out) {
                    block.store(chunk, |[i]| readable[[255 - i % 256]]);
                }
            }
        },
    );
    insta::assert_snapshot!("kernel_cooperative_gpu", gpu);
    insta::assert_snapshot!("kernel_cooperative_host", host);
}

#[test]
fn a_cooperative_kernel_takes_its_block_size_from_its_block() {
    // Whether the kernel is cooperative is its context type's answer, asked in an assertion
    // that its block size is not also given.
    let reverse = quote! {
        pub fn reverse(block: Block<'_, 256>, out: DeviceMdspanMut<'_, u32, Dims<1>>) {}
    };
    let output = crate::kernel::expand(quote!(block_threads = 256), reverse).to_string();
    assert!(
        output.contains(
            "const _ : () = :: core :: assert ! (! < Block < 'static , 256 > as :: dlmd :: kernel :: Context < 'static >> \
             :: COOPERATIVE"
        ) && output.contains("`block_threads` is for element-wise kernels"),
        "{output}"
    );
}

/// The expansion of `kernel` with its first parameter's type written `context`, and that type's
/// text in the output replaced by `CONTEXT`, the signature digest by `DIGEST`.
fn with_context(context: TokenStream) -> String {
    let item = quote! {
        pub fn sum(block: #context, x: DeviceMdspan<'_, f32, Dims<1>>, mut out: DeviceMdspanMut<'_, f32, Dims<1>>) {}
    };
    let written = |lifetime: &str| {
        let mut ty: syn::Type = syn::parse2(context.clone()).expect("a type");
        crate::kernel::SetLifetimes(syn::Lifetime::new(lifetime, proc_macro2::Span::call_site()))
            .visit_type_mut(&mut ty);
        quote!(#ty).to_string()
    };
    let function: syn::ItemFn = syn::parse2(item.clone()).expect("a function");
    let types: Vec<syn::Type> = function
        .sig
        .inputs
        .iter()
        .map(|input| match input {
            syn::FnArg::Typed(arg) => {
                let mut ty = (*arg.ty).clone();
                crate::kernel::SetLifetimes(syn::Lifetime::new("'_", proc_macro2::Span::call_site()))
                    .visit_type_mut(&mut ty);
                ty
            }
            syn::FnArg::Receiver(_) => unreachable!("a kernel takes no `self`"),
        })
        .collect();
    let digest = crate::kernel::signature_digest("sum", &types);
    crate::kernel::expand(quote!(), item)
        .to_string()
        .replace(&format!("{digest}u64"), "DIGEST")
        .replace(&written("'static"), "CONTEXT")
        .replace(&written("'_"), "CONTEXT")
}

#[test]
fn the_context_is_asked_of_its_type_not_its_name() {
    // A `Block` written as itself, by its path, as an alias or as a renamed import: one
    // expansion, whose block size and reserved shared memory come from the type's `Context`
    // impl, and whose launcher passes every parameter but the first.
    let block = with_context(quote!(Block<'_, 256>));
    for context in [
        quote!(dlmd::kernel::Block<'_, 256>),
        quote!(Cooperative),
        quote!(Thread),
        quote!(Tiles<'_>),
    ] {
        assert_eq!(with_context(context.clone()), block, "{context}");
    }
    assert!(
        block.contains(
            "if < CONTEXT as :: dlmd :: kernel :: Context < 'static >> :: COOPERATIVE { :: core :: option :: Option \
             :: Some (< CONTEXT as :: dlmd :: kernel :: Context < 'static >> :: SHARED_BYTES)"
        ) && block.contains(":: dlmd :: __private :: kernel_context :: < CONTEXT > ()"),
        "{block}"
    );
}

#[test]
fn a_kernel_without_parameters_has_no_context() {
    let output = crate::kernel::expand(
        quote!(),
        quote!(
            pub fn nothing() {}
        ),
    )
    .to_string();
    assert!(
        output.starts_with(":: core :: compile_error !") && output.contains("a kernel takes its context first"),
        "{output}"
    );
}

#[test]
fn kernel_option_errors_name_what_to_change() {
    let scale = quote! {
        pub fn scale(thread: Thread, mut x: DeviceMdspanMut<'_, f32, Dims<1>>) {}
    };
    for (args, message) in [
        (quote!(min_blocks_per_sm = 0), "a number of blocks from 1 to 32"),
        (quote!(min_blocks_per_sm = 33), "a number of blocks from 1 to 32"),
        (quote!(crate = a, crate = b), "keep one `#[dlmd::kernel(crate = ...)]`"),
        (
            quote!(threads = 256),
            "the options are `crate = path::to::dlmd`, `min_blocks_per_sm = N` and `block_threads = N`",
        ),
        (quote!(block_threads = 100), "a multiple of 32 from 32 to 1024"),
        (quote!(block_threads = 2048), "a multiple of 32 from 32 to 1024"),
        (
            quote!(block_threads = 64, block_threads = 64),
            "`block_threads` is given twice",
        ),
    ] {
        let output = crate::kernel::expand(args.clone(), scale.clone()).to_string();
        assert!(
            output.starts_with(":: core :: compile_error !") && output.contains(message),
            "{args}: {output}"
        );
    }
}

#[test]
fn device_items_go_through_dlmd() {
    let helper = quote!(
        fn twice(x: f32) -> f32 {
            2.0 * x
        }
    );
    let expanded = crate::device::expand(quote!(), helper.clone()).to_string();
    assert_eq!(expanded, quote!(::dlmd::__device! { #helper }).to_string());
    let renamed = crate::device::expand(quote!(crate = my::dlmd), helper.clone()).to_string();
    assert_eq!(renamed, quote!(my::dlmd::__device! { #helper }).to_string());
    let refused = crate::device::expand(quote!(inline), helper).to_string();
    assert!(refused.contains("takes one option: `crate = path`"), "{refused}");
}
