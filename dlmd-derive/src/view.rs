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
    data: Expr,
    mutable: bool,
    extents: Vec<Extent>,
    extents_span: Span,
    layout: LayoutKind,
    layout_span: Span,
    strides: Option<(Vec<Stride>, Span)>,
}

impl Parse for Input {
    fn parse(input: ParseStream) -> syn::Result<Self> {
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
                    return Err(Error::new(
                        ident.span(),
                        format_args!(
                            "unknown layout `{other}`: `dlmd!` takes `layout_right` (the default), \
                             `layout_left` or `layout_stride` (with `strides = [..]`)"
                        ),
                    ));
                }
            };
        }
        Ok(Input {
            data,
            mutable,
            extents: extents.into_iter().collect(),
            extents_span: bracket.span.join(),
            layout,
            layout_span,
            strides,
        })
    }
}

pub fn expand(tokens: TokenStream) -> TokenStream {
    syn::parse2::<Input>(tokens)
        .and_then(|input| generate(&input))
        .unwrap_or_else(Error::into_compile_error)
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

fn generate(input: &Input) -> syn::Result<TokenStream> {
    let data = &input.data;
    let rank = input.extents.len();
    let infer: Vec<usize> = input
        .extents
        .iter()
        .enumerate()
        .filter(|(_, e)| matches!(e, Extent::Infer(_)))
        .map(|(i, _)| i)
        .collect();
    if let [_, second, ..] = infer.as_slice() {
        let Extent::Infer(span) = input.extents[*second] else {
            unreachable!()
        };
        return Err(Error::new(
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
        return Err(Error::new(
            input.layout_span,
            "`layout_stride` needs `strides = [..]`, one per dimension",
        ));
    }
    if let Some((strides, span)) = &input.strides {
        if strides.len() != rank {
            return Err(Error::new(
                *span,
                format_args!(
                    "{} strides given for {rank} extents; give one stride per dimension",
                    strides.len()
                ),
            ));
        }
        if input.layout != LayoutKind::Stride {
            let name = if input.layout == LayoutKind::Left {
                "layout_left"
            } else {
                "layout_right"
            };
            let (Some(extents), Some(given)) =
                (&statics, strides.iter().map(|s| s.value).collect::<Option<Vec<i64>>>())
            else {
                return Err(Error::new(
                    *span,
                    format_args!(
                        "strides given with {name} must be literals over static extents, so they can \
                         be checked here; use `layout_stride` for strides known at run time"
                    ),
                ));
            };
            let expected = compact_strides(extents, input.layout == LayoutKind::Left);
            for (dim, (g, e)) in given.iter().zip(&expected).enumerate() {
                if extents[dim] > 1 && *g as u64 != *e {
                    return Err(Error::new(
                        strides[dim].expr.span(),
                        format_args!("stride {g} of dimension {dim} contradicts {name}, which needs {e}"),
                    ));
                }
            }
        }
    }

    if rank == 0 {
        let ctor = if input.mutable {
            quote!(scalar_view_mut)
        } else {
            quote!(scalar_view)
        };
        return Ok(quote!(::dlmd::__private::#ctor(#data)));
    }

    let extent_types = input.extents.iter().map(|e| match e {
        Extent::Static(n, span) => {
            let n = *n as usize;
            quote_spanned!(*span=> ::dlmd::extents::Const<#n>)
        }
        Extent::Infer(span) => quote_spanned!(*span=> ::dlmd::extents::Dyn),
        Extent::Dynamic(expr) => quote_spanned!(expr.span()=> ::dlmd::extents::Dyn),
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
        Some(dim) => quote!(::core::option::Option::Some(#dim)),
        None => quote!(::core::option::Option::None),
    };

    let len_check = match &statics {
        Some(extents) => {
            let product: u64 = extents.iter().product();
            let product = product as usize;
            quote_spanned!(input.extents_span=> ::dlmd::__private::check_len::<_, #product>(&*__dlmd_data);)
        }
        None => quote!(),
    };

    let layout = match input.layout {
        LayoutKind::Right => quote!(::dlmd::layout::LayoutRight),
        LayoutKind::Left => quote!(::dlmd::layout::LayoutLeft),
        LayoutKind::Stride => quote!(::dlmd::layout::LayoutStride),
    };
    let build = match (&input.strides, input.layout) {
        (Some((strides, _)), LayoutKind::Stride) => {
            let strides = strides.iter().map(|s| &s.expr);
            let ctor = if input.mutable {
                quote!(strided_view_mut)
            } else {
                quote!(strided_view)
            };
            quote!(::dlmd::__private::#ctor::<_, #extents_ty>(__dlmd_data, [#(#extent_values),*], #infer, [#(#strides),*]))
        }
        _ => {
            let ctor = if input.mutable {
                quote!(compact_view_mut)
            } else {
                quote!(compact_view)
            };
            quote!(::dlmd::__private::#ctor::<_, #extents_ty, #layout>(__dlmd_data, [#(#extent_values),*], #infer))
        }
    };
    Ok(quote! {
        {
            let __dlmd_data = #data;
            #len_check
            #build
        }
    })
}
