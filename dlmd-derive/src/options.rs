//! What the macros' options share: `crate = path`, the path of the `dlmd` crate where it is not
//! `::dlmd` (a crate that renames its dependency, or re-exports dlmd), read the same way by
//! `#[derive(DlElement)]`'s `#[dlmd(...)]` and by `#[dlmd::kernel(...)]`.

use syn::Path;
use syn::meta::ParseNestedMeta;

/// Reads `crate = path` into `krate`, refusing a second one (`usage` is how the message shows
/// the option written once).
pub fn crate_path(meta: &ParseNestedMeta<'_>, krate: &mut Option<Path>, usage: &str) -> syn::Result<()> {
    if krate.is_some() {
        return Err(meta.error(format!("`crate` is given twice; keep one {usage}")));
    }
    *krate = Some(meta.value()?.parse()?);
    Ok(())
}

/// The `dlmd` crate's path: `krate` where given, `::dlmd` otherwise.
pub fn dlmd_path(krate: Option<Path>) -> Path {
    krate.unwrap_or_else(|| syn::parse_quote!(::dlmd))
}
