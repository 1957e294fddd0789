//! `#[fenced_write]`: a repository method that writes a fenced table does not compile
//! unless it takes the lease that authorises the write, and the SQL it sends always
//! carries the fence.
//!
//! Use it through the `fenced` crate, which re-exports it. See [`fenced_write`].

mod args;
mod expand;
mod signature;
mod statement;

use proc_macro::TokenStream;

/// Makes a repository method a fenced write.
#[proc_macro_attribute]
pub fn fenced_write(args: TokenStream, item: TokenStream) -> TokenStream {
    let mut parsed = args::Args::default();
    let parser = syn::meta::parser(|meta| parsed.parse_one(meta));
    if let Err(error) = syn::parse::Parser::parse(parser, args) {
        return fallback(error, item);
    }
    let method = match syn::parse::<signature::Method>(item.clone()) {
        Ok(method) => method,
        Err(error) => {
            let error = syn::Error::new(
                error.span(),
                format!("`#[fenced_write]` goes on an `async fn`: {error}"),
            );
            return fallback(error, item);
        }
    };
    expand::expand(parsed, method).into()
}

/// The errors, then the item unchanged apart from what only this macro understands.
fn fallback(error: syn::Error, item: TokenStream) -> TokenStream {
    let mut out = error.to_compile_error();
    match syn::parse::<signature::Method>(item.clone()) {
        Ok(method) => {
            let attrs = &method.attrs;
            let vis = &method.vis;
            let sig = signature::stripped(&method.sig);
            out.extend(quote::quote! {
                #(#attrs)*
                #vis #sig {
                    ::core::unimplemented!()
                }
            });
        }
        Err(_) => out.extend(proc_macro2::TokenStream::from(item)),
    }
    out.into()
}
