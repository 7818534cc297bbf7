//! `#[dlmd(...)]` options on the deriving type.

use syn::{Attribute, Path};

/// Options read from `#[dlmd(...)]`.
pub struct Options {
    /// `crate = path`: where to find dlmd, `::dlmd` when absent.
    pub krate: Option<Path>,
}

/// Reads every `#[dlmd(...)]` attribute, collecting all errors.
pub fn options(attrs: &[Attribute]) -> syn::Result<Options> {
    let mut krate: Option<Path> = None;
    let mut errors: Option<syn::Error> = None;
    for attr in attrs.iter().filter(|a| a.path().is_ident("dlmd")) {
        let parsed = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("crate") {
                crate::options::crate_path(&meta, &mut krate, "`#[dlmd(crate = ...)]`")
            } else {
                Err(meta.error("unknown `dlmd` option; the only option is `crate = path::to::dlmd`"))
            }
        });
        if let Err(e) = parsed {
            match &mut errors {
                Some(all) => all.combine(e),
                None => errors = Some(e),
            }
        }
    }
    match errors {
        Some(e) => Err(e),
        None => Ok(Options { krate }),
    }
}
