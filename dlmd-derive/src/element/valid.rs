//! Checks what can be checked on the tokens, and decides which kind of element the item is.
//!
//! What needs types (that a field is an element, that fields agree, that there is no padding)
//! is left to the trait bounds and `const` assertions `expand` emits.

use super::ast::{Body, Field, Input};
use super::repr::Repr;
use syn::{Error, GenericParam, Type};

/// Most lanes a vector element may have, as for `[S; N]`.
pub const MAX_LANES: usize = 16;

/// The kind of element the item is.
pub enum Shape<'a> {
    /// One field: the element has the field's data type.
    Newtype { field: &'a Field<'a> },
    /// Two or more fields of one lane type: a vector of that many lanes.
    Vector {
        fields: Vec<&'a Field<'a>>,
        scalar: &'a Type,
    },
}

/// Validates the item, collecting every error it finds.
pub fn shape<'a>(input: &'a Input<'a>, repr: &Repr) -> Result<Shape<'a>, Error> {
    let mut errors = Errors::default();
    let fields = match &input.body {
        Body::Enum(span) => {
            return Err(Error::new(
                *span,
                "`DlElement` cannot be derived for an enum: DLPack has no enum type and a foreign \
                 producer can send any value; use a `#[repr(transparent)]` newtype over an integer",
            ));
        }
        Body::Union(span) => {
            return Err(Error::new(
                *span,
                "`DlElement` cannot be derived for a union: DLPack cannot describe overlapping \
                 fields; use a `#[repr(C)]` struct or a `#[repr(transparent)]` newtype",
            ));
        }
        Body::Struct { fields, span } => {
            if fields.iter().all(|field| field.is_phantom()) {
                errors.push(Error::new(
                    *span,
                    "`DlElement` needs at least one data field (`PhantomData` markers hold none): \
                     an element with no data has no DLPack type; add a field such as `f32`",
                ));
            }
            fields
        }
    };

    if repr.c.is_none() && repr.transparent.is_none() {
        errors.push(Error::new(
            input.ident.span(),
            "`DlElement` needs `#[repr(C)]` or `#[repr(transparent)]` so the layout is fixed; \
             add `#[repr(C)]` to this struct",
        ));
    }

    // `PhantomData` markers are zero-sized: they take no lane (a transparent newtype may have
    // them beside its one field).
    let data: Vec<&Field<'_>> = fields.iter().filter(|field| !field.is_phantom()).collect();
    if let (Some(span), true) = (repr.transparent, data.len() > 1) {
        errors.push(Error::new(
            span,
            "`DlElement` derives for a `#[repr(transparent)]` newtype of exactly one field; \
             for a vector of several lanes use `#[repr(C)]`",
        ));
    }

    for param in &input.generics.params {
        match param {
            GenericParam::Lifetime(lifetime) => errors.push(Error::new_spanned(
                lifetime,
                "a `DlElement` cannot borrow: elements are plain `'static` data; remove the lifetime",
            )),
            // A transparent struct of several fields is reported above already.
            GenericParam::Type(_) | GenericParam::Const(_) if repr.transparent.is_none() => {
                errors.push(Error::new_spanned(
                    param,
                    "only a `#[repr(transparent)]` newtype can be a generic `DlElement` \
                     (`struct Wrap<T>(T);`); a vector struct needs its concrete scalar type",
                ));
            }
            _ => {}
        }
    }

    if data.len() > MAX_LANES {
        errors.push(Error::new_spanned(
            data[MAX_LANES].ty,
            format_args!(
                "a vector `DlElement` has at most {MAX_LANES} lanes, like `[S; N]`; this struct has {}",
                data.len()
            ),
        ));
    }

    errors.finish()?;
    Ok(match data.as_slice() {
        [field] => Shape::Newtype { field },
        all => Shape::Vector {
            scalar: all[0].ty,
            fields: all.to_vec(),
        },
    })
}

#[derive(Default)]
struct Errors(Option<Error>);

impl Errors {
    fn push(&mut self, error: Error) {
        match &mut self.0 {
            Some(all) => all.combine(error),
            None => self.0 = Some(error),
        }
    }

    fn finish(self) -> Result<(), Error> {
        self.0.map_or(Ok(()), Err)
    }
}
