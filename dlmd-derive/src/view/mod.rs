//! `dlmd!(data, [extents] [, layout] [, strides = [..]])`: a host view in one line.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Error, Expr, ExprLit, Ident, Lit, Token, bracketed};

/// One extent as written.
enum Extent {
    /// An integer literal: a static extent.
    Static(u64, Span),
    /// `_`: dynamic, inferred from the data's length.
    Infer(Span),
    /// Any other expression: dynamic, evaluated at run time.
    Dynamic(Expr),
}

impl Parse for Extent {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        if input.peek(Token![_]) {
            let underscore: Token![_] = input.parse()?;
            return Ok(Extent::Infer(underscore.span));
        }
        let expr: Expr = input.parse()?;
        if let Expr::Lit(ExprLit { lit: Lit::Int(int), .. }) = &expr {
            return Ok(Extent::Static(int.base10_parse()?, int.span()));
        }
        Ok(Extent::Dynamic(expr))
    }
}

/// One stride as written: a literal or an expression.
struct Stride {
    expr: Expr,
    value: Option<i64>,
}

impl Parse for Stride {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let expr: Expr = input.parse()?;
        let value = match &expr {
            Expr::Lit(ExprLit { lit: Lit::Int(int), .. }) => Some(int.base10_parse()?),
            _ => None,
        };
        Ok(Stride { expr, value })
    }
}

#[derive(Clone, Copy, PartialEq)]
enum LayoutKind {
    Right,
    Left,
    Stride,
}

struct Input {
    /// The path of the dlmd crate: `$crate` when called through `dlmd::dlmd!`.
    krate: TokenStream,
    data: Expr,
    mutable: bool,
    extents: Vec<Extent>,
    extents_span: Span,
    layout: LayoutKind,
    layout_span: Span,
    strides: Option<(Vec<Stride>, Span)>,
    /// Problems found while parsing that do not stop it (an unknown layout), reported with the
    /// others.
    errors: Vec<Error>,
}

impl Parse for Input {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        // `dlmd::dlmd!` passes its `$crate` first, as `@crate <path>;`, so that the expansion
        // reaches the crate under whatever name it was imported; a direct call uses `::dlmd`.
        let krate = if input.peek(Token![@]) {
            input.parse::<Token![@]>()?;
            input.parse::<Token![crate]>()?;
            let mut path = TokenStream::new();
            while !input.peek(Token![;]) {
                path.extend([input.parse::<proc_macro2::TokenTree>()?]);
            }
            input.parse::<Token![;]>()?;
            path
        } else {
            quote!(::dlmd)
        };
        let mut errors = Vec::new();
        let data: Expr = input.parse()?;
        let mutable = matches!(&data, Expr::Reference(r) if r.mutability.is_some());
        input.parse::<Token![,]>()?;
        let content;
        let bracket = bracketed!(content in input);
        let extents: Punctuated<Extent, Token![,]> = Punctuated::parse_terminated(&content)?;
        let mut layout = LayoutKind::Right;
        let mut layout_span = Span::call_site();
        let mut strides = None;
        while input.peek(Token![,]) {
            input.parse::<Token![,]>()?;
            if input.is_empty() {
                break;
            }
            let ident: Ident = input.parse()?;
            if ident == "strides" {
                input.parse::<Token![=]>()?;
                let content;
                let bracket = bracketed!(content in input);
                let list: Punctuated<Stride, Token![,]> = Punctuated::parse_terminated(&content)?;
                strides = Some((list.into_iter().collect(), bracket.span.join()));
                continue;
            }
            layout_span = ident.span();
            layout = match ident.to_string().as_str() {
                "layout_right" => LayoutKind::Right,
                "layout_left" => LayoutKind::Left,
                "layout_stride" => LayoutKind::Stride,
                other => {
                    errors.push(Error::new(
                        ident.span(),
                        format_args!(
                            "unknown layout `{other}`: `dlmd!` takes `layout_right` (the default), \
                             `layout_left` or `layout_stride` (with `strides = [..]`)"
                        ),
                    ));
                    // Checked as the default layout, so that the other mistakes show too.
                    LayoutKind::Right
                }
            };
        }
        Ok(Input {
            krate,
            data,
            mutable,
            extents: extents.into_iter().collect(),
            extents_span: bracket.span.join(),
            layout,
            layout_span,
            strides,
            errors,
        })
    }
}

pub fn expand(tokens: TokenStream) -> TokenStream {
    match syn::parse2::<Input>(tokens) {
        Ok(input) => generate(&input),
        Err(error) => error.into_compile_error(),
    }
}

/// Every error at once, then an expression of type `!` in place of the view, so that the
/// mistakes do not cascade into type errors where the view is used.
fn report(errors: Vec<Error>, krate: &TokenStream) -> TokenStream {
    let errors = errors.into_iter().map(Error::into_compile_error);
    quote! {
        {
            #(#errors)*
            #krate::__private::core::unreachable!()
        }
    }
}

/// Row-major or column-major strides of static extents.
fn compact_strides(extents: &[u64], left: bool) -> Vec<u64> {
    let mut strides = vec![0; extents.len()];
    let mut stride = 1u64;
    let order: Vec<usize> = if left {
        (0..extents.len()).collect()
    } else {
        (0..extents.len()).rev().collect()
    };
    for dim in order {
        strides[dim] = stride;
        stride = stride.saturating_mul(extents[dim]);
    }
    strides
}

fn generate(input: &Input) -> TokenStream {
    let mut errors = input.errors.clone();
    let krate = &input.krate;
    let data = &input.data;
    let rank = input.extents.len();
    let infer: Vec<usize> = input
        .extents
        .iter()
        .enumerate()
        .filter(|(_, e)| matches!(e, Extent::Infer(_)))
        .map(|(i, _)| i)
        .collect();
    for &extra in infer.iter().skip(1) {
        let Extent::Infer(span) = input.extents[extra] else {
            unreachable!("`infer` lists the `_` extents")
        };
        errors.push(Error::new(
            span,
            "only one extent can be inferred with `_`; give the others",
        ));
    }
    let statics: Option<Vec<u64>> = input
        .extents
        .iter()
        .map(|e| if let Extent::Static(n, _) = e { Some(*n) } else { None })
        .collect();

    // Strides: required for layout_stride; for the compact layouts, only literals that agree.
    if input.layout == LayoutKind::Stride && input.strides.is_none() {
        errors.push(Error::new(
            input.layout_span,
            "`layout_stride` needs `strides = [..]`, one per dimension",
        ));
    }
    if let Some((strides, span)) = &input.strides {
        if strides.len() != rank {
            errors.push(Error::new(
                *span,
                format_args!(
                    "{} strides given for {rank} extents; give one stride per dimension",
                    strides.len()
                ),
            ));
        } else if input.layout != LayoutKind::Stride {
            let name = if input.layout == LayoutKind::Left {
                "layout_left"
            } else {
                "layout_right"
            };
            match (&statics, strides.iter().map(|s| s.value).collect::<Option<Vec<i64>>>()) {
                (Some(extents), Some(given)) => {
                    let expected = compact_strides(extents, input.layout == LayoutKind::Left);
                    for (dim, (g, e)) in given.iter().zip(&expected).enumerate() {
                        if extents[dim] > 1 && *g as u64 != *e {
                            errors.push(Error::new(
                                strides[dim].expr.span(),
                                format_args!("stride {g} of dimension {dim} contradicts {name}, which needs {e}"),
                            ));
                        }
                    }
                }
                _ => errors.push(Error::new(
                    *span,
                    format_args!(
                        "strides given with {name} must be literals over static extents, so they can \
                         be checked here; use `layout_stride` for strides known at run time"
                    ),
                )),
            }
        }
    }
    if !errors.is_empty() {
        return report(errors, krate);
    }

    if rank == 0 {
        let ctor = if input.mutable {
            quote!(scalar_view_mut)
        } else {
            quote!(scalar_view)
        };
        return quote!(#krate::__private::#ctor(#data));
    }

    let extent_types = input.extents.iter().map(|e| match e {
        Extent::Static(n, span) => {
            let n = *n as usize;
            quote_spanned!(*span=> #krate::extents::Const<#n>)
        }
        Extent::Infer(span) => quote_spanned!(*span=> #krate::extents::Dyn),
        Extent::Dynamic(expr) => quote_spanned!(expr.span()=> #krate::extents::Dyn),
    });
    let extents_ty = quote!((#(#extent_types,)*));
    let extent_values = input.extents.iter().map(|e| match e {
        Extent::Static(n, _) => {
            let n = *n as usize;
            quote!(#n)
        }
        Extent::Infer(_) => quote!(0usize),
        Extent::Dynamic(expr) => quote!(#expr),
    });
    let infer = match infer.first() {
        Some(dim) => quote!(#krate::__private::core::option::Option::Some(#dim)),
        None => quote!(#krate::__private::core::option::Option::None),
    };

    // One name for the data, with one span: the length check is spanned at the extents for its
    // message, and must still see the binding.
    let binding = Ident::new("__dlmd_data", Span::call_site());
    let len_check = match &statics {
        Some(extents) => {
            let product: u64 = extents.iter().product();
            let product = product as usize;
            quote_spanned!(input.extents_span=> #krate::__private::check_len::<_, #product>(&*#binding);)
        }
        None => quote!(),
    };

    let layout = match input.layout {
        LayoutKind::Right => quote!(#krate::layout::LayoutRight),
        LayoutKind::Left => quote!(#krate::layout::LayoutLeft),
        LayoutKind::Stride => quote!(#krate::layout::LayoutStride),
    };
    let build = match (&input.strides, input.layout) {
        (Some((strides, _)), LayoutKind::Stride) => {
            let strides = strides.iter().map(|s| &s.expr);
            let ctor = if input.mutable {
                quote!(strided_view_mut)
            } else {
                quote!(strided_view)
            };
            quote!(#krate::__private::#ctor::<_, #extents_ty>(#binding, [#(#extent_values),*], #infer, [#(#strides),*]))
        }
        _ => {
            let ctor = if input.mutable {
                quote!(compact_view_mut)
            } else {
                quote!(compact_view)
            };
            quote!(#krate::__private::#ctor::<_, #extents_ty, #layout>(#binding, [#(#extent_values),*], #infer))
        }
    };
    quote! {
        {
            let #binding = #data;
            #len_check
            #build
        }
    }
}
