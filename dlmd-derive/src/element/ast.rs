//! The deriving item, reduced to what `DlElement` cares about.

use proc_macro2::Span;
use syn::{Data, DeriveInput, Fields, Generics, Ident, Type, spanned::Spanned};

/// The item `#[derive(DlElement)]` is on.
pub struct Input<'a> {
    pub ident: &'a Ident,
    pub generics: &'a Generics,
    pub body: Body<'a>,
}

/// What kind of item it is.
pub enum Body<'a> {
    /// A struct (named, tuple or unit), with its fields in order.
    Struct { fields: Vec<Field<'a>>, span: Span },
    /// An enum, with the span of the `enum` keyword.
    Enum(Span),
    /// A union, with the span of the `union` keyword.
    Union(Span),
}

/// One struct field.
pub struct Field<'a> {
    pub ty: &'a Type,
}

impl Field<'_> {
    /// Whether the field is a zero-sized `PhantomData` marker (by its type's last path segment),
    /// which has no data and no place in the element's layout.
    pub fn is_phantom(&self) -> bool {
        matches!(self.ty, Type::Path(path) if path.qself.is_none()
            && path.path.segments.last().is_some_and(|segment| segment.ident == "PhantomData"))
    }
}

impl<'a> Input<'a> {
    pub fn from_syn(input: &'a DeriveInput) -> Self {
        let body = match &input.data {
            Data::Struct(data) => Body::Struct {
                fields: fields(&data.fields),
                span: if data.fields.is_empty() {
                    input.ident.span()
                } else {
                    data.fields.span()
                },
            },
            Data::Enum(data) => Body::Enum(data.enum_token.span),
            Data::Union(data) => Body::Union(data.union_token.span),
        };
        Input {
            ident: &input.ident,
            generics: &input.generics,
            body,
        }
    }
}

fn fields(fields: &Fields) -> Vec<Field<'_>> {
    fields.iter().map(|field| Field { ty: &field.ty }).collect()
}
