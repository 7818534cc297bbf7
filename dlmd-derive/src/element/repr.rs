//! `#[repr(...)]` of the deriving type.

use proc_macro2::Span;
use syn::{Attribute, LitInt};

/// The representation hints that decide whether the layout is fixed.
#[derive(Default)]
pub struct Repr {
    /// `repr(C)`, with the span of `C`.
    pub c: Option<Span>,
    /// `repr(transparent)`, with its span.
    pub transparent: Option<Span>,
    /// `repr(packed)` or `repr(packed(N))`, with its span.
    pub packed: Option<Span>,
    /// `repr(align(N))`, with its span.
    pub align: Option<Span>,
}

/// Reads every `#[repr(...)]` attribute. Hints dlmd does not care about (`Rust`, integer types)
/// are accepted and ignored here; rustc itself rejects the invalid combinations.
pub fn repr(attrs: &[Attribute]) -> syn::Result<Repr> {
    let mut repr = Repr::default();
    for attr in attrs.iter().filter(|a| a.path().is_ident("repr")) {
        attr.parse_nested_meta(|meta| {
            let span = meta.path.get_ident().map_or_else(Span::call_site, |i| i.span());
            if meta.path.is_ident("C") {
                repr.c = Some(span);
            } else if meta.path.is_ident("transparent") {
                repr.transparent = Some(span);
            } else if meta.path.is_ident("packed") {
                repr.packed = Some(span);
                if meta.input.peek(syn::token::Paren) {
                    let content;
                    syn::parenthesized!(content in meta.input);
                    content.parse::<LitInt>()?;
                }
            } else if meta.path.is_ident("align") {
                repr.align = Some(span);
                let content;
                syn::parenthesized!(content in meta.input);
                content.parse::<LitInt>()?;
            }
            Ok(())
        })?;
    }
    Ok(repr)
}
