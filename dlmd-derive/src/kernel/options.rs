//! `#[dlmd::kernel(...)]`'s arguments.

use proc_macro2::TokenStream;
use syn::Path;
use syn::parse::Parser;

/// The attribute's options.
pub(super) struct Options {
    /// `crate = path`: the `dlmd` crate's path, `::dlmd` by default.
    pub(super) krate: Path,
    /// `min_blocks_per_sm = N`: the blocks of a cooperative kernel each multiprocessor must
    /// hold at once (CUDA's `__launch_bounds__(threads, N)`), which caps the registers a thread
    /// may use.
    pub(super) min_blocks_per_sm: Option<syn::LitInt>,
    /// `block_threads = N`: an element-wise kernel's block size, fixed (the launcher enforces
    /// `(N, 1, 1)`), which `min_blocks_per_sm` can then bound.
    pub(super) block_threads: Option<syn::LitInt>,
}

/// The [`Options`] from the attribute's arguments.
pub(super) fn options(args: TokenStream) -> syn::Result<Options> {
    let mut krate: Option<Path> = None;
    let mut min_blocks_per_sm: Option<syn::LitInt> = None;
    let mut block_threads: Option<syn::LitInt> = None;
    let parser = syn::meta::parser(|meta| {
        if meta.path.is_ident("crate") {
            crate::options::crate_path(&meta, &mut krate, "`#[dlmd::kernel(crate = ...)]`")
        } else if meta.path.is_ident("min_blocks_per_sm") {
            if min_blocks_per_sm.is_some() {
                return Err(meta.error("`min_blocks_per_sm` is given twice"));
            }
            let n: syn::LitInt = meta.value()?.parse()?;
            match n.base10_parse::<u32>() {
                Ok(1..=32) => min_blocks_per_sm = Some(n),
                _ => {
                    return Err(syn::Error::new(
                        n.span(),
                        "`min_blocks_per_sm` is a number of blocks from 1 to 32",
                    ));
                }
            }
            Ok(())
        } else if meta.path.is_ident("block_threads") {
            if block_threads.is_some() {
                return Err(meta.error("`block_threads` is given twice"));
            }
            let literal: syn::LitInt = meta.value()?.parse()?;
            match literal.base10_parse::<u32>() {
                Ok(n) if (32..=1024).contains(&n) && n % 32 == 0 => {
                    block_threads = Some(syn::LitInt::new(&format!("{n}u32"), literal.span()))
                }
                _ => {
                    return Err(syn::Error::new(
                        literal.span(),
                        "`block_threads` is a multiple of 32 from 32 to 1024",
                    ));
                }
            }
            Ok(())
        } else {
            Err(meta.error(
                "unknown option; the options are `crate = path::to::dlmd`, `min_blocks_per_sm = N` and `block_threads = N`",
            ))
        }
    });
    parser.parse2(args)?;
    Ok(Options {
        krate: crate::options::dlmd_path(krate),
        min_blocks_per_sm,
        block_threads,
    })
}
