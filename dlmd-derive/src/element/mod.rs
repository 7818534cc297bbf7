//! `#[derive(DlElement)]`: the deriving type read ([`ast`]), its `#[repr]` and `#[dlmd]` options
//! ([`repr`], [`attr`]), its shape checked ([`valid`]), and the `DlElement` impl generated with
//! the compile-time checks that need types.

mod ast;
mod attr;
mod repr;
mod valid;

use ast::Input;
use proc_macro2::{Group, Span, TokenStream, TokenTree};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{DeriveInput, LitStr};
use valid::Shape;

/// Expands `#[derive(DlElement)]`; errors become `compile_error!` beside a placeholder impl so
/// that one mistake does not cascade into errors at every use of the type.
pub fn derive(input: &DeriveInput) -> TokenStream {
    let parsed = Input::from_syn(input);
    let options = attr::options(&input.attrs);
    let krate = crate::options::dlmd_path(options.as_ref().ok().and_then(|o| o.krate.clone()));
    let krate = quote!(#krate);
    let result = options.and_then(|_| {
        let repr = repr::repr(&input.attrs)?;
        let shape = valid::shape(&parsed, &repr)?;
        Ok(expand(&parsed, &repr, &shape, &krate))
    });
    result.unwrap_or_else(|error| {
        let mut tokens = error.into_compile_error();
        tokens.extend(placeholder(&parsed, &krate));
        tokens
    })
}

fn expand(input: &Input<'_>, repr: &repr::Repr, shape: &Shape<'_>, krate: &TokenStream) -> TokenStream {
    let ident = input.ident;
    let name = ident.to_string();
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    let body = match shape {
        Shape::Newtype { field } => {
            let ty = field.ty;
            let bound_trait = respan(quote!(#krate::DlElement), ty.span());
            let lane_trait = respan(quote!(#krate::DlLane), ty.span());
            let mut bounds = vec![quote!(#ty: #bound_trait)];
            // A generic newtype is an element only where it is `Copy`, `Send`, `Sync` and
            // `'static` (which its parameters decide, say through a `PhantomData<T>` field).
            if !input.generics.params.is_empty() {
                bounds.push(quote! {
                    Self: ::core::marker::Copy
                        + ::core::marker::Send
                        + ::core::marker::Sync
                        + 'static
                });
            }
            let where_clause = match where_clause {
                Some(w) => quote!(#w, #(#bounds),*),
                None => quote!(where #(#bounds),*),
            };
            // Higher-ranked, so that a newtype of a vector (whose field is no lane) gets an impl
            // that never applies rather than a bound rustc refuses as trivially false.
            // `Self: DlElement` too, so that a newtype missing `Copy` is reported once, on the
            // `DlElement` impl.
            let lane_where = quote!(#where_clause, for<'__dlmd> #ty: #lane_trait, for<'__dlmd> Self: #krate::DlElement);
            // A transparent newtype has its field's layout by rustc's guarantee; a `repr(C)` one
            // can grow padding or lose alignment through `align`/`packed`, so it is checked.
            let layout = if repr.transparent.is_some() {
                quote!()
            } else {
                layout_checks(
                    input,
                    repr,
                    quote!(#ty),
                    quote!(1usize),
                    &name,
                    &quote!(#ty).to_string(),
                )
            };
            let cuda = cuda_element(
                krate,
                quote!(#impl_generics),
                quote!(#ident #ty_generics),
                quote!(#where_clause,),
                ty,
            );
            quote! {
                #cuda
                unsafe impl #impl_generics #krate::DlElement for #ident #ty_generics #where_clause {
                    const DTYPE: #krate::dlpack::DLDataType = <#ty as #krate::DlElement>::DTYPE;
                    const LANES: ::core::primitive::u16 = <#ty as #krate::DlElement>::LANES;
                    type Scalar = <#ty as #krate::DlElement>::Scalar;
                    type Storage = <#ty as #krate::DlElement>::Storage;
                }
                // A newtype of one lane is a lane: it can make up vector elements.
                unsafe impl #impl_generics #krate::DlLane for #ident #ty_generics #lane_where {}
                #layout
            }
        }
        Shape::Vector { fields, scalar } => {
            let lanes = fields.len() as u16;
            let bound_trait = respan(quote!(#krate::DlLane), scalar.span());
            let bound = quote!(#scalar: #bound_trait);
            let same = fields[1..].iter().map(|field| {
                let ty = field.ty;
                let check = respan(quote!(#krate::__private::assert_same_type), ty.span());
                quote_spanned!(ty.span()=> const _: () = #check::<#ty, #scalar>();)
            });
            let layout = layout_checks(
                input,
                repr,
                quote!(#scalar),
                quote!(#lanes as ::core::primitive::usize),
                &name,
                &quote!(#scalar).to_string(),
            );
            let cuda = cuda_element(krate, quote!(), quote!(#ident), quote!(where), scalar);
            quote! {
                #cuda
                unsafe impl #krate::DlElement for #ident where #bound {
                    const DTYPE: #krate::dlpack::DLDataType = #krate::dlpack::DLDataType {
                        lanes: #lanes,
                        ..<#scalar as #krate::DlElement>::DTYPE
                    };
                    const LANES: ::core::primitive::u16 = #lanes;
                    type Scalar = <#scalar as #krate::DlElement>::Scalar;
                    type Storage = <#scalar as #krate::DlElement>::Storage;
                }
                #(#same)*
                #layout
            }
        }
    };
    quote! {
        #[automatically_derived]
        #[allow(non_local_definitions)]
        const _: () = {
            #body
        };
    }
}

/// `const` assertions that `Self` is `lanes` values of `lane` with no padding and at least the
/// lane's alignment. They are non-generic items, so `cargo check` evaluates them too.
/// What the derive adds for CUDA (dlmd's `__cuda_element!`, which expands to nothing without
/// its `cuda` feature): `DeviceRepr` for the type, and `ValidAsZeroBits` where `lane` is. `bounds`
/// opens both where clauses: the type's own, with a comma, or a bare `where`.
fn cuda_element(
    krate: &TokenStream,
    generics: TokenStream,
    ty: TokenStream,
    bounds: TokenStream,
    lane: &syn::Type,
) -> TokenStream {
    let zero_trait = respan(quote!(#krate::__private::ValidAsZeroBits), lane.span());
    quote! {
        #krate::__cuda_element! {
            {#generics}
            {#ty}
            {#bounds for<'__dlmd> Self: #krate::DlElement}
            {#bounds for<'__dlmd> #lane: #zero_trait}
        }
    }
}

fn layout_checks(
    input: &Input<'_>,
    repr: &repr::Repr,
    lane: TokenStream,
    lanes: TokenStream,
    name: &str,
    lane_name: &str,
) -> TokenStream {
    let ident = input.ident;
    let span = repr.align.or(repr.c).unwrap_or_else(|| ident.span());
    let padding = LitStr::new(
        &format!(
            "`{name}` has padding: its size is not the sum of its fields' sizes, so it is not a \
             DLPack element; remove `align(...)` or make the fields fill it"
        ),
        span,
    );
    let packed_span = repr.packed.unwrap_or(span);
    let packed = LitStr::new(
        &format!(
            "`{name}` is less aligned than `{lane_name}`, so consumers would read its lanes \
             misaligned; remove `packed` or give it `packed(N)` with N at least the alignment \
             of `{lane_name}`"
        ),
        packed_span,
    );
    // Spanned at the `repr` hint at fault, so the failed assertion points there.
    let size_check = quote_spanned! {span=>
        const _: () = ::core::assert!(
            ::core::mem::size_of::<#ident>() == #lanes * ::core::mem::size_of::<#lane>(),
            #padding
        );
    };
    let align_check = quote_spanned! {packed_span=>
        const _: () = ::core::assert!(
            ::core::mem::align_of::<#ident>() >= ::core::mem::align_of::<#lane>(),
            #packed
        );
    };
    quote!(#size_check #align_check)
}

/// Gives every token of `tokens` the span `span`, so that an error about them points at the
/// user's code rather than at the derive.
fn respan(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|mut token| {
            if let TokenTree::Group(group) = &token {
                let mut inner = Group::new(group.delimiter(), respan(group.stream(), span));
                inner.set_span(span);
                token = TokenTree::Group(inner);
            } else {
                token.set_span(span);
            }
            token
        })
        .collect()
}

/// An impl that stands in for the real one when the input has errors, so that uses of the type
/// report nothing more. It never reaches a finished build: the `compile_error!` beside it stops
/// compilation first. Generic items get none: a placeholder would need bounds the item does not
/// have, and report them.
fn placeholder(input: &Input<'_>, krate: &TokenStream) -> TokenStream {
    if !input.generics.params.is_empty() {
        return TokenStream::new();
    }
    let ident = input.ident;
    quote! {
        #[automatically_derived]
        const _: () = {
            unsafe impl #krate::DlElement for #ident {
                const DTYPE: #krate::dlpack::DLDataType = <::core::primitive::u8 as #krate::DlElement>::DTYPE;
                const LANES: ::core::primitive::u16 = 1;
                type Scalar = ::core::primitive::u8;
                type Storage = #krate::ByteExact;
            }
        };
    }
}
