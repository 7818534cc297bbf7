//! `#[dlmd::device]`: an item of a kernel crate that kernels use and the host does not (a helper
//! function over device views, a constant table, a module): compiled for `nvptx64`, and on the
//! host only where kernel bodies are type-checked (`--cfg dlmd_kernel_check`), through dlmd's
//! `__device!`, which dlmd defines for the build it is part of.

use proc_macro2::TokenStream;
use quote::quote;
use syn::Path;

/// Expands `#[dlmd::device(args)] item`. A mistaken option is reported and the item kept, so
/// that the option is the only error.
pub fn expand(args: TokenStream, item: TokenStream) -> TokenStream {
    let mut krate: Option<Path> = None;
    let parser = syn::meta::parser(|meta| {
        if meta.path.is_ident("crate") {
            crate::options::crate_path(&meta, &mut krate, "`#[dlmd::device(crate = ...)]`")
        } else {
            Err(meta.error("`#[dlmd::device]` takes one option: `crate = path`"))
        }
    });
    let error = syn::parse::Parser::parse2(parser, args)
        .err()
        .map(|e| e.to_compile_error());
    let krate = crate::options::dlmd_path(krate);
    quote! {
        #error
        #krate::__device! {
            #item
        }
    }
}
