//! What every expansion emits beside the method: its `…_sql` companion, and on error the
//! fallback, the errors followed by the method with a stub body, so that one mistake does
//! not cascade.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::Path;

use crate::args::Args;
use crate::signature::{self, Method};

/// The `<method>_sql` companion of `method`, documented with `doc`, with `body`; none in
/// a trait's `impl`, which may hold only the trait's items.
pub(crate) fn companion(
    args: &Args,
    method: &Method,
    krate: &Path,
    doc: &str,
    body: TokenStream,
) -> Option<TokenStream> {
    let vis = &method.vis;
    let sql_fn = format_ident!("{}_sql", method.sig.ident);
    (!args.trait_impl).then(|| {
        quote! {
            #[allow(dead_code)]
            #[doc = #doc]
            #vis fn #sql_fn(
                table: &#krate::FencedTable,
                dialect: #krate::Dialect,
            ) -> #krate::Result<&'static str> {
                #body
            }
        }
    })
}

/// `errors`, then the method as written with a stub body (a method without one would
/// be an error of its own; `probe` first in it) and a stub companion, so that one
/// mistake does not cascade.
pub(crate) fn fallback(
    errors: Vec<syn::Error>,
    args: &Args,
    method: &Method,
    krate: &Path,
    doc: &str,
    probe: Option<TokenStream>,
) -> TokenStream {
    let errors = errors
        .into_iter()
        .reduce(|mut all, e| {
            all.combine(e);
            all
        })
        .map(|e| e.to_compile_error());
    let companion = companion(
        args,
        method,
        krate,
        doc,
        quote! {
            let _ = (table, dialect);
            ::core::unimplemented!()
        },
    );
    let attrs = &method.attrs;
    let vis = &method.vis;
    let sig = signature::stripped(&method.sig);
    quote! {
        #errors
        #(#attrs)*
        #[allow(unused_variables)]
        #vis #sig {
            #probe
            ::core::unimplemented!()
        }
        #companion
    }
}
