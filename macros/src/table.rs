//! `table!("jobs")`: the declared table, built at compile time from `fenced.toml` and
//! expanded into the builder calls that make it at run time.

use fenced_guard::{ColumnType, FencedTable, KeyType};
use proc_macro2::TokenStream;
use quote::quote;
use syn::parse::{Parse, ParseStream};
use syn::{LitStr, Path, Token};

use crate::declaration;

/// `"jobs"`, then optionally `, declarations = "..."` and `, crate = "..."`.
pub(crate) struct TableArgs {
    name: LitStr,
    declarations: Option<LitStr>,
    krate: Option<Path>,
}

impl Parse for TableArgs {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let name: LitStr = input.parse().map_err(|e| {
            syn::Error::new(
                e.span(),
                "expected the declared table's name, e.g. `fenced::table!(\"jobs\")`",
            )
        })?;
        let mut args = TableArgs {
            name,
            declarations: None,
            krate: None,
        };
        while !input.is_empty() {
            input.parse::<Token![,]>()?;
            if input.is_empty() {
                break;
            }
            let key: syn::Ident = syn::ext::IdentExt::parse_any(input)?;
            input.parse::<Token![=]>()?;
            let value: LitStr = input.parse()?;
            let slot_taken = match key.to_string().as_str() {
                "declarations" => args.declarations.replace(value).is_some(),
                "crate" => args.krate.replace(value.parse()?).is_some(),
                other => {
                    return Err(syn::Error::new(
                        key.span(),
                        format!("unknown option `{other}`; expected `declarations` or `crate`"),
                    ));
                }
            };
            if slot_taken {
                return Err(syn::Error::new(
                    key.span(),
                    "this option is given twice; keep one",
                ));
            }
        }
        Ok(args)
    }
}

/// Expands `table!(args)` into an expression of type `fenced::Result<FencedTable>`.
pub(crate) fn expand(args: TableArgs) -> syn::Result<TokenStream> {
    let Some(found) = declaration::load(args.declarations.as_ref())? else {
        return Err(syn::Error::new(
            args.name.span(),
            "no `fenced.toml` in this crate's directory or a parent of it: declare the table \
             there, or name the file with `declarations = \"...\"`",
        ));
    };
    let table = found
        .declarations
        .table(&args.name.value())
        .map_err(|e| syn::Error::new(args.name.span(), e.to_string()))?;
    let krate = args.krate.unwrap_or_else(|| syn::parse_quote!(::fenced));
    let tracking = found.tracking();
    let calls = builder_calls(&table, &krate);
    Ok(quote! {
        {
            #tracking
            #krate::FencedTable::builder() #(#calls)* .build()
        }
    })
}

/// The builder calls that make `table` again.
fn builder_calls(table: &FencedTable, krate: &Path) -> Vec<TokenStream> {
    let text = |s: &dyn ToString| s.to_string();
    let (name, key, generation, owner, expiry, published, epoch) = (
        text(table.name()),
        text(table.key_column()),
        text(table.generation_column()),
        text(table.owner_column()),
        text(table.expiry_column()),
        text(table.published_column()),
        text(table.epoch_column()),
    );
    let (epoch_table, operations_table) =
        (text(table.epoch_table()), text(table.operations_table()));
    let key_type = match table.key_type() {
        KeyType::Uuid => quote!(Uuid),
        KeyType::BigInt => quote!(BigInt),
        KeyType::Text => quote!(Text),
    };
    let stamp = table.stamps_timeline();
    let mut calls = vec![
        quote!(.table(#name)),
        quote!(.key_column(#key)),
        quote!(.key_type(#krate::KeyType::#key_type)),
        quote!(.generation_column(#generation)),
        quote!(.owner_column(#owner)),
        quote!(.expiry_column(#expiry)),
        quote!(.published_column(#published)),
        quote!(.epoch_column(#epoch)),
        quote!(.epoch_table(#epoch_table)),
        quote!(.operations_table(#operations_table)),
        quote!(.stamp_timeline(#stamp)),
    ];
    if let Some(published_at) = table.published_at_column() {
        let published_at = published_at.to_string();
        calls.push(quote!(.published_at_column(#published_at)));
    }
    for column in table.columns() {
        let name = column.name().to_string();
        let column_type = match column.column_type() {
            ColumnType::Bool => quote!(Bool),
            ColumnType::BigInt => quote!(BigInt),
            ColumnType::Double => quote!(Double),
            ColumnType::Text => quote!(Text),
            ColumnType::Bytes => quote!(Bytes),
            ColumnType::Uuid => quote!(Uuid),
        };
        calls.push(quote!(.column(#name, #krate::ColumnType::#column_type)));
    }
    // The other declared tables and theirs: a fenced transaction under this table's
    // leases may not write them.
    let own = [table.name(), table.epoch_table(), table.operations_table()];
    for other in table.protected_tables().filter(|t| !own.contains(t)) {
        let other = other.to_string();
        calls.push(quote!(.other_fenced_table(#other)));
    }
    calls
}
