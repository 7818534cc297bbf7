//! `#[dlmd::kernel]`: one function, two expansions. For `nvptx64` a PTX entry point that
//! makes the context (the first parameter), rebuilds each other parameter from its
//! `KernelParam::Param` and calls the body; for the host a launcher whose parameters take
//! values of the same types (lifetimes tied to the `cuda::scope` of the launch) or imported
//! tensors checked as them, which checks the arguments and the module's signature digest, then
//! launches. What depends on the context (block size, shared memory, which options apply) is
//! asked of its type through `dlmd::kernel::Context`, never read from how the type is written.

mod options;

use options::{Options, options};
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};

use syn::spanned::Spanned;
use syn::visit_mut::VisitMut;
use syn::{FnArg, ItemFn, Lifetime, Pat, ReturnType, Type};

/// Expands `#[dlmd::kernel(args)] item`.
pub fn expand(args: TokenStream, item: TokenStream) -> TokenStream {
    match expand_inner(args, item) {
        Ok(tokens) => tokens,
        Err(e) => e.to_compile_error(),
    }
}

fn expand_inner(args: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let Options {
        krate,
        min_blocks_per_sm,
        block_threads: fixed_threads,
    } = options(args)?;
    let function: ItemFn = syn::parse2(item)?;
    check_signature(&function)?;
    let sig = &function.sig;
    let name = &sig.ident;
    let vis = &function.vis;
    let docs: Vec<_> = function.attrs.iter().filter(|a| a.path().is_ident("doc")).collect();

    // The parameters' names as the body binds them; a pattern that binds no one name gets a
    // hygienic name of the macro's own.
    let mut names = Vec::new();
    let mut types = Vec::new();
    for (i, input) in sig.inputs.iter().enumerate() {
        let FnArg::Typed(arg) = input else {
            return Err(syn::Error::new(input.span(), "a kernel takes no `self`"));
        };
        let name = match &*arg.pat {
            Pat::Ident(ident) if ident.subpat.is_none() => ident.ident.clone(),
            _ => format_ident!("__dlmd_arg{}", i, span = Span::mixed_site()),
        };
        names.push(name);
        types.push((*arg.ty).clone());
    }
    // The first parameter is the context, whatever its type is called: its `Context` impl
    // (checked below) says what kind, the block size and the shared memory. Every other
    // parameter is one the launcher passes, which must be a `KernelParam` (a second context
    // is not).
    let (Some(context_name), Some(context_type)) = (names.first().cloned(), types.first().cloned()) else {
        return Err(syn::Error::new(
            sig.paren_token.span.join(),
            "a kernel takes its context first: `thread: Thread` (element-wise) or `block: Block<'_, N>` \
             (cooperative)",
        ));
    };
    let with = |lifetime: &str, types: &[Type]| -> Vec<Type> {
        types
            .iter()
            .map(|ty| {
                let mut ty = ty.clone();
                SetLifetimes(Lifetime::new(lifetime, Span::call_site())).visit_type_mut(&mut ty);
                ty
            })
            .collect()
    };
    // The parameters the launcher passes: all but the context, which the entry point makes.
    let (launch_names, launch_types) = (&names[1..], &types[1..]);
    // The macro's own locals, beside the user's names: hygienic, so that a parameter named
    // like one of them neither takes its place nor meets it.
    let local = |name: &str| syn::Ident::new(name, Span::mixed_site());
    let params: Vec<_> = (0..launch_names.len())
        .map(|i| format_ident!("__dlmd_param{}", i, span = Span::mixed_site()))
        .collect();
    let leave = local("__dlmd_leave");
    let (anchor, body_fn, launch, args, infos, params_local) = (
        local("__dlmd_anchor"),
        local("__dlmd_kernel_body"),
        local("launch"),
        local("args"),
        local("infos"),
        local("params"),
    );
    let count = launch_names.len();
    let (static_types, inferred_types, scope_types) = (
        with("'static", launch_types),
        with("'_", launch_types),
        with("'scope", launch_types),
    );
    let written = signature_digest(&name.to_string(), &with("'_", &types));
    let context_static = with("'static", std::slice::from_ref(&context_type)).remove(0);
    let context_inferred = with("'_", std::slice::from_ref(&context_type)).remove(0);
    let context = quote!(<#context_static as #krate::kernel::Context<'static>>);
    // Compiles only for a context: the error points at the first parameter's type.
    let context_check = quote_spanned! {context_type.span()=>
        #krate::__private::kernel_context::<#context_static>();
    };
    // The block size the launch must have, which the launcher enforces and the digest carries:
    // `block_threads = N` of an element-wise kernel, or its context's (a `Block`'s; `None` for
    // a `Thread`).
    let block_threads = match &fixed_threads {
        Some(n) => quote!(::core::option::Option::Some(#n)),
        None => quote!(#context::BLOCK_THREADS),
    };
    // The dynamic shared memory the launcher reserves: a cooperative context's tiles and
    // scratch; `None` leaves it to the launch (an element-wise kernel's own).
    let shared_bytes = quote! {
        if #context::COOPERATIVE {
            ::core::option::Option::Some(#context::SHARED_BYTES)
        } else {
            ::core::option::Option::<u32>::None
        }
    };
    // What the options need of the context, asked of its type (non-generic items, evaluated by
    // `cargo check` too): `block_threads` only for an element-wise kernel, `min_blocks_per_sm`
    // only where the block size is fixed.
    let threads_check = fixed_threads.as_ref().map(|n| {
        quote_spanned! {n.span()=>
            const _: () = ::core::assert!(
                !#context::COOPERATIVE,
                "a cooperative kernel's block size is its `Block`'s: `block_threads` is for element-wise kernels",
            );
        }
    });
    let min_blocks_check = match (&min_blocks_per_sm, &fixed_threads) {
        (Some(n), None) => Some(quote_spanned! {n.span()=>
            const _: () = ::core::assert!(
                #context::BLOCK_THREADS.is_some(),
                "`min_blocks_per_sm` bounds the blocks of a kernel whose block size is fixed: take a `Block` first, \
                 or give an element-wise kernel `block_threads = N`",
            );
        }),
        _ => None,
    };
    // The digest as the compiler resolves it: the written signature with each parameter
    // type's fingerprint (`cfg`-chosen aliases, features), the block size and the block's
    // shared bytes (what the launch reserves and the tiles use) mixed in, the same expression
    // on both targets.
    let digest = quote! {
        #krate::kernel::signature::digest(
            #written,
            &[
                #(<#static_types as #krate::kernel::KernelParam>::FINGERPRINT,)*
                match #block_threads { ::core::option::Option::Some(n) => n as u64 + 1, ::core::option::Option::None => 0 },
                match #shared_bytes { ::core::option::Option::Some(n) => n as u64 + 1, ::core::option::Option::None => 0 },
            ],
        )
    };
    // The kernel's launch bounds, which `dlmd-build` writes into its entry point (`.reqntid`,
    // `.minnctapersm`) where the block size is fixed: the block's threads (0: any), and the
    // blocks per multiprocessor.
    let bounds_symbol = format_ident!("{}__dlmd_launch_bounds", name);
    let min_blocks = min_blocks_per_sm.map_or_else(|| quote!(0u32), |n| quote!(#n));
    let launch_bounds = quote! {
        /// The kernel's launch bounds: its block's threads (0: any) and the blocks each
        /// multiprocessor must hold (0: any), which `dlmd-build` writes into the entry point.
        #[cfg(target_arch = "nvptx64")]
        #[unsafe(no_mangle)]
        #[allow(non_upper_case_globals)]
        #vis static #bounds_symbol: [u32; 2] = [
            match #block_threads { ::core::option::Option::Some(n) => n, ::core::option::Option::None => 0 },
            #min_blocks,
        ];
    };
    let signature_symbol = format_ident!("{}__dlmd_signature", name);
    let name_str = syn::ext::IdentExt::unraw(name).to_string();
    // Parameters read in place (`KernelParam::IN_PLACE`: TMA tensor maps) are 64-byte aligned
    // in the entry point, which rustc cannot declare: the kernel names which of its PTX
    // parameters (`NAME_param_J`, those of a nonzero size, counted from 0) need it, and
    // `dlmd-build` writes the alignment into the entry point; a launch refuses a module where
    // it is missing. Decided from the types, by their constants.
    let sizes = quote! {
        [#(::core::mem::size_of::<<#static_types as #krate::kernel::KernelParam>::Param>(),)*]
    };
    let in_place = quote! {
        [#(<#static_types as #krate::kernel::KernelParam>::IN_PLACE,)*]
    };
    let align_symbol = format_ident!("{}__dlmd_param_align", name);
    let param_align = (count > 0).then(|| {
        quote! {
            /// The alignment each of the kernel's PTX parameters needs (64 for those read in
            /// place, 0 for the rest), which `dlmd-build` writes into the entry point.
            #[cfg(target_arch = "nvptx64")]
            #[unsafe(no_mangle)]
            #[allow(non_upper_case_globals)]
            #vis static #align_symbol: [u8; #count] = #krate::__private::ptx_param_alignments(#sizes, #in_place);
        }
    });
    let param_prefix = format!("{}_param_", syn::ext::IdentExt::unraw(name));
    let param_indices: Vec<_> = (0..count).collect();

    let mut body = function.clone();
    body.sig.ident = format_ident!("__dlmd_kernel_body");
    body.vis = syn::Visibility::Inherited;
    body.attrs.retain(|a| !a.path().is_ident("doc"));
    // The same body on the host, which only a build that type-checks kernel bodies keeps
    // (`dlmd::kernel::check`): nothing calls it.
    let mut host_body = body.clone();
    host_body.sig.ident = format_ident!("__dlmd_check_{}", name);

    let param_checks: Vec<_> = launch_types
        .iter()
        .map(|ty| {
            quote_spanned! {ty.span()=>
                #krate::__private::kernel_param::<#ty>();
            }
        })
        .collect();

    // Two parameters of one type (as written) are easily swapped at a launch, and a swap still
    // compiles: such a kernel's launcher takes its arguments by parameter name, in a struct.
    let repeated = {
        let written: Vec<String> = inferred_types.iter().map(|ty| quote!(#ty).to_string()).collect();
        written.iter().enumerate().any(|(i, a)| written[..i].contains(a))
    };
    let launcher_doc = if repeated {
        quote! {
            ///
            /// Two of its parameters have one type, so the arguments go by parameter name, in
            /// the struct of the same name with `Args` after it: an argument given for the
            /// other parameter of its type is then a visible mistake, not a silent one.
        }
    } else {
        quote!()
    };
    let (args_struct, launcher_args, unpack) = if repeated {
        let struct_name = format_ident!("{}Args", upper_camel(&name_str), span = name.span());
        let generics: Vec<_> = (0..count).map(|i| format_ident!("__DlmdArg{}", i)).collect();
        let fields = launch_names
            .iter()
            .zip(&generics)
            .zip(&inferred_types)
            .map(|((n, g), ty)| {
                let doc = format!(
                    "The argument for `{n}`: a `{}`, or an import checked as one.",
                    type_text(ty)
                );
                quote! {
                    #[doc = #doc]
                    pub #n: #g
                }
            });
        let doc = format!("The arguments of a launch of [`{name_str}`], by parameter name.");
        (
            // On both targets, so that a re-export of the kernel's names reads the same on each.
            quote! {
                #[doc = #doc]
                #vis struct #struct_name<#(#generics),*> {
                    #(#fields,)*
                }
            },
            quote!(#args: #struct_name<#(impl #krate::cuda::KernelArg<#scope_types, #name::#launch_names>),*>),
            quote!(let #struct_name { #(#launch_names),* } = #args;),
        )
    } else {
        (
            quote!(),
            quote!(#(#launch_names: impl #krate::cuda::KernelArg<#scope_types, #name::#launch_names>),*),
            quote!(),
        )
    };

    // A type named after each parameter, which the launcher's messages name it by.
    let params_doc = format!("The parameters of [`{name_str}`], as types its launcher's messages name them by.");
    let param_types = quote! {
        #[cfg(not(target_arch = "nvptx64"))]
        #[doc = #params_doc]
        #[doc(hidden)]
        #vis mod #name {
            #(
                #[allow(non_camel_case_types)]
                #[derive(Debug)]
                pub struct #launch_names;
            )*
        }
    };

    Ok(quote! {
        #param_types

        #[cfg(target_arch = "nvptx64")]
        #(#docs)*
        #[unsafe(no_mangle)]
        #vis extern "ptx-kernel" fn #name(#(#params: <#static_types as #krate::kernel::KernelParam>::Param),*) {
            // The body as a value, named before any parameter is.
            let #body_fn = {
                #[inline(always)]
                #body
                __dlmd_kernel_body
            };
            #(#param_checks)*
            #context_check
            let #anchor = ();
            // SAFETY: first in the entry point, run by every thread of the launch, with the
            // `min_blocks_per_sm` its launch bounds declare.
            let #context_name: #context_inferred = unsafe { #krate::kernel::Context::enter(&#anchor, #min_blocks) };
            // What the context does when the body is done (a block waits for copies in flight).
            let #leave = #krate::kernel::leave_of(&#context_name);
            #(
                let #launch_names = if <#static_types as #krate::kernel::KernelParam>::IN_PLACE {
                    // The parameter's address in the parameter space, as a generic address.
                    let at = #krate::__param_address!(
                        #param_prefix,
                        #krate::__private::ptx_param_index(#sizes, #param_indices)
                    );
                    // SAFETY: the launcher made the parameter with `to_param` from a value of
                    // this type, whose memory its `cuda::scope` keeps valid until the kernel is
                    // done; `at` is the address of the entry point's parameter it was read
                    // from (its PTX index counts the parameters of a nonzero size before it),
                    // which nothing writes, declared 64-byte aligned (`IN_PLACE`: the launch
                    // checked the module's declaration against these types).
                    unsafe {
                        <#inferred_types as #krate::kernel::KernelParam>::from_param_in_place(
                            #params,
                            at as usize as *const _,
                        )
                    }
                } else {
                    // SAFETY: the launcher made the parameter with `to_param` from a value of
                    // this type, whose memory its `cuda::scope` keeps valid until the kernel is
                    // done.
                    unsafe { <#inferred_types as #krate::kernel::KernelParam>::from_param(#params) }
                };
            )*
            #body_fn(#(#names),*);
            // Where the kernel is built for sm_80 or later (asynchronous copies exist there).
            #[cfg(target_feature = "sm_80")]
            // SAFETY: last in the entry point, once the body has returned, on sm_80 or later.
            unsafe {
                #leave()
            };
            #[cfg(not(target_feature = "sm_80"))]
            let _ = #leave;
        }

        #threads_check
        #min_blocks_check

        #launch_bounds

        #param_align

        #args_struct

        #[cfg(not(target_arch = "nvptx64"))]
        #krate::__device! {
            #[allow(dead_code, non_snake_case, clippy::too_many_arguments)]
            #host_body
        }

        /// The digest of the kernel's signature, which its launcher checks in the PTX.
        #[cfg(target_arch = "nvptx64")]
        #[unsafe(no_mangle)]
        #[allow(non_upper_case_globals)]
        #vis static #signature_symbol: u64 = #digest;

        /// The digest of the kernel's signature as the launcher was built, which the launch
        /// compares with the one in the PTX.
        #[cfg(not(target_arch = "nvptx64"))]
        #[doc(hidden)]
        #[allow(non_upper_case_globals)]
        #vis const #signature_symbol: u64 = #digest;

        #[cfg(not(target_arch = "nvptx64"))]
        #(#docs)*
        ///
        /// Launches the kernel (built for the host by `#[dlmd::kernel]`) on `launch`'s stream,
        /// with its grid: in a `cuda::scope`, which waits for it, or without one (an imported
        /// tensor's launch, on its producer's stream), which waits for nothing. Each argument is
        /// a value of the parameter's type or an imported tensor checked as one
        /// (`imported.arg()?`); every device view must be on the stream's device.
        #launcher_doc
        #[allow(clippy::too_many_arguments)]
        #vis fn #name<'scope>(
            #launch: #krate::cuda::Launch<'_, 'scope, '_>,
            #launcher_args
        ) -> ::core::result::Result<(), #krate::cuda::CudaError> {
            #unpack
            #(#param_checks)*
            #context_check
            let #launch = #launch.block(#name_str, #block_threads, #shared_bytes)?;
            #(let mut #params = #krate::cuda::KernelArg::<#scope_types, #name::#launch_names>::to_param(&#launch_names);)*
            let #infos: [#krate::cuda::ArgInfo<'_>; #count] =
                [#(#krate::cuda::KernelArg::<#scope_types, #name::#launch_names>::info(&#launch_names)),*];
            let mut #params_local: [*mut ::core::ffi::c_void; #count] =
                [#((&raw mut #params).cast::<::core::ffi::c_void>()),*];
            // SAFETY: the entry point `#name` of a kernel crate's PTX takes these parameters'
            // forms in this order (both expansions come from this signature), which `run`
            // checks through the digest the PTX carries; the views not imported live for
            // `'scope`, which the scope waits out (or is `'static`, without a scope).
            unsafe {
                #launch.run(
                    #name_str,
                    #signature_symbol,
                    &#krate::__private::ptx_param_alignments(#sizes, #in_place),
                    &#infos,
                    &mut #params_local,
                )
            }
        }
    })
}

/// A type as it is written, without the spaces tokens print with: `Mdspan<'_, f32, Dims<2>>`.
fn type_text(ty: &Type) -> String {
    quote!(#ty)
        .to_string()
        .replace(" <", "<")
        .replace("< ", "<")
        .replace(" >", ">")
        .replace(" ,", ",")
        .replace(" :: ", "::")
        .replace("& ", "&")
}

/// `snake_case` as `UpperCamelCase`: `scale_rows` → `ScaleRows`.
fn upper_camel(name: &str) -> String {
    name.split('_')
        .filter(|part| !part.is_empty())
        .map(|part| {
            let mut chars = part.chars();
            chars
                .next()
                .map(|first| first.to_uppercase().chain(chars).collect::<String>())
                .unwrap_or_default()
        })
        .collect()
}

/// Refuses what a PTX entry point cannot be.
fn check_signature(function: &ItemFn) -> syn::Result<()> {
    let sig = &function.sig;
    let mut errors: Vec<syn::Error> = Vec::new();
    let mut refuse = |span: Span, why: &str| errors.push(syn::Error::new(span, why));
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        refuse(
            sig.generics.span(),
            "a kernel cannot be generic: the PTX entry point has one signature (write `'_` for view lifetimes)",
        );
    }
    if let ReturnType::Type(_, ty) = &sig.output {
        refuse(
            ty.span(),
            "a kernel returns nothing: write its results into a mutable view",
        );
    }
    if let Some(t) = &sig.asyncness {
        refuse(t.span(), "a kernel cannot be `async`");
    }
    if let Some(t) = &sig.constness {
        refuse(t.span(), "a kernel cannot be `const`");
    }
    if let Some(t) = &sig.unsafety {
        refuse(
            t.span(),
            "a kernel is not `unsafe`: its launcher checks the parameters; keep `unsafe` blocks inside",
        );
    }
    if let Some(abi) = &sig.abi {
        refuse(
            abi.span(),
            "a kernel takes no ABI: `#[dlmd::kernel]` gives the entry point `ptx-kernel`",
        );
    }
    if let Some(v) = &sig.variadic {
        refuse(v.span(), "a kernel cannot be variadic");
    }
    for input in &sig.inputs {
        if let FnArg::Typed(arg) = input {
            let mut named = NamedLifetimes(Vec::new());
            let mut ty = (*arg.ty).clone();
            named.visit_type_mut(&mut ty);
            for lifetime in named.0 {
                refuse(
                    lifetime.span(),
                    "write `'_` for a kernel parameter's lifetime: the launch ties every view to its `cuda::scope`",
                );
            }
            if let Type::Reference(r) = &*arg.ty {
                refuse(
                    r.span(),
                    "a kernel takes views and elements by value, not references (the GPU cannot follow a host reference)",
                );
            }
        }
    }
    match errors.into_iter().reduce(|mut all, e| {
        all.combine(e);
        all
    }) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Replaces every lifetime of a type.
pub(crate) struct SetLifetimes(pub(crate) Lifetime);

impl VisitMut for SetLifetimes {
    fn visit_lifetime_mut(&mut self, lifetime: &mut Lifetime) {
        *lifetime = Lifetime::new(&format!("'{}", self.0.ident), lifetime.span());
    }
}

/// Collects the lifetimes of a type other than `'_`.
struct NamedLifetimes(Vec<Lifetime>);

impl VisitMut for NamedLifetimes {
    fn visit_lifetime_mut(&mut self, lifetime: &mut Lifetime) {
        if lifetime.ident != "_" {
            self.0.push(lifetime.clone());
        }
    }
}

/// FNV-1a of `name(type, …)` as the tokens print: the same on both expansions of one source,
/// different when the PTX was built from another signature as written. What the tokens cannot
/// show (an alias that a `cfg` resolves differently) the parameters' fingerprints add.
pub(crate) fn signature_digest(name: &str, types: &[Type]) -> u64 {
    let text = format!(
        "{name}({})",
        types
            .iter()
            .map(|t| quote!(#t).to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |hash, b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}
