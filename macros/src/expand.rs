//! The expansion of a write to the lease's own table: the method's body and its `…_sql`
//! companion's. A statement on another table is `transaction`'s; what both emit around
//! their bodies is in `companion` (the companion, the fallback on error) and `literal`
//! (errors inside the SQL).

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::LitStr;
use syn::ext::IdentExt;
use syn::spanned::Spanned;

use crate::args::{self, Args, Name};
use crate::companion::{companion, fallback};
use crate::declaration;
use crate::literal::sql_error;
use crate::signature::{self, Method};
use crate::statement::{self, Declared};
use crate::transaction;

/// Expands `#[fenced_write(args)] method`.
pub(crate) fn expand(mut args: Args, method: Method) -> TokenStream {
    let mut errors = Vec::new();
    let found = declaration::load(args.declarations.as_ref()).unwrap_or_else(|error| {
        errors.push(error);
        None
    });
    if let Some(found) = &found {
        errors.extend(declaration::apply(&mut args, found));
    }
    let tracking = found.as_ref().map(declaration::Found::tracking);
    signature::shape(&method, &mut errors);
    let fenced = transaction::fenced_param(&method.sig, &mut errors);
    if let (Some(table), Some(sql)) = (&args.table, &args.sql)
        && args::table_problem(&table.value()).is_none()
        && let Some((target, _)) = transaction::other_table(&sql.value(), &table.value())
    {
        return transaction::expand_other(
            &args,
            &method,
            fenced.as_ref(),
            (table, &target),
            found.as_ref(),
            errors,
        );
    }
    let roles = match &fenced {
        Some(fenced) => transaction::roles(&method.sig, fenced, &args, &mut errors),
        None => signature::roles(
            &method.sig,
            args.lease.as_ref(),
            args.store.as_ref(),
            args.operation.as_ref(),
            &mut errors,
        ),
    };
    if let Some(op) = &args.operation {
        if fenced.is_some() {
            errors.push(syn::Error::new_spanned(
                op,
                "a method inside a fenced transaction carries no operation id of its own: \
                 record one for the whole transaction with `Fenced::record(op)`, before its \
                 writes",
            ));
        } else if !returns_operation_outcome(&method.sig.output) {
            errors.push(syn::Error::new_spanned(
                &method.sig.output,
                "with `operation = ...`, declare the return type \
                 `-> fenced::Result<fenced::OperationOutcome>`: the write is applied, refused, \
                 or already applied by an earlier attempt with the same id",
            ));
        }
    }
    let method_name = method.sig.ident.to_string();

    let table = match &args.table {
        Some(lit) => {
            let value = lit.value();
            if let Some(problem) = args::table_problem(&value) {
                errors.push(syn::Error::new_spanned(
                    lit,
                    format!("invalid table name: {problem}"),
                ));
            }
            Some(value)
        }
        None => {
            errors.push(syn::Error::new(
                Span::call_site(),
                "missing the fenced table: add `table = \"dbo.ReportPublication\"` to \
                 `#[fenced_write(...)]`",
            ));
            None
        }
    };
    let names = [
        &args.key,
        &args.generation,
        &args.owner,
        &args.expiry,
        &args.published,
        &args.epoch,
    ];
    for (i, name) in names.iter().enumerate() {
        let span = name
            .literal
            .as_ref()
            .map_or_else(Span::call_site, LitStr::span);
        if let Some(reason) = args::identifier_problem(&name.value) {
            errors.push(syn::Error::new(
                span,
                format!("invalid column name `{}`: {reason}", name.value),
            ));
        } else if names[..i]
            .iter()
            .any(|other| other.value.eq_ignore_ascii_case(&name.value))
        {
            errors.push(syn::Error::new(
                span,
                format!(
                    "column `{}` is given two roles: key, generation, owner, expiry, \
                     published and epoch must be different columns",
                    name.value
                ),
            ));
        }
    }

    let mut checked = None;
    match (&args.sql, &table) {
        (None, _) => errors.push(syn::Error::new(
            Span::call_site(),
            "missing the statement: add `sql = \"UPDATE ReportPublication SET Payload = @payload\"` \
             to `#[fenced_write(...)]`",
        )),
        (Some(lit), Some(table)) => {
            let declared = Declared {
                table: table.clone(),
                key: args.key.value.clone(),
                generation: args.generation.value.clone(),
                owner: args.owner.value.clone(),
                expiry: args.expiry.value.clone(),
                published: args.published.value.clone(),
                epoch: args.epoch.value.clone(),
                publish_once: args.publish_once,
                dialect: args.dialect.as_ref().map(|(d, _)| *d),
            };
            // `r#type` is written `@type`.
            let params: Vec<String> = roles
                .values
                .iter()
                .map(|v| v.ident.unraw().to_string())
                .collect();
            let outcome = statement::check(&lit.value(), &declared, &method_name, &params);
            match outcome.result {
                Ok(c) => checked = Some(c),
                Err(problems) => errors.extend(problems.iter().map(|p| sql_error(lit, p))),
            }
            // Without a lease the parameters' roles are uncertain (the lease may be among
            // them): the lease's error alone is reported.
            let unused = if roles.lease.is_some() {
                outcome.unused
            } else {
                Vec::new()
            };
            for i in unused {
                let ident = &roles.values[i].ident.unraw();
                errors.push(syn::Error::new_spanned(
                    ident,
                    format!(
                        "parameter `{ident}` is not used by the SQL: write `@{ident}` where its \
                         value belongs, or remove the parameter"
                    ),
                ));
            }
        }
        (Some(_), None) => {}
    }

    let krate = args::krate(&args);
    let sig = signature::stripped(&method.sig);
    let attrs = &method.attrs;
    let vis = &method.vis;
    let sql_fn = format_ident!("{}_sql", method.sig.ident);
    let sql_doc = format!(
        "The statement `{method_name}` sends on `dialect` to a store whose table is `table`, \
         fence included (generated by `#[fenced_write]`); an error when `table` is not the \
         declared one, or `{method_name}` is written for another dialect."
    );
    let probe = companion_probe(&args, &method, &sql_fn);
    let companion = |body: TokenStream| companion(&args, &method, &krate, &sql_doc, body);

    let (Some(checked), Some(table), Some(lease), Some(store), true) = (
        checked,
        table,
        roles.lease.as_ref(),
        roles.store.as_ref(),
        errors.is_empty(),
    ) else {
        return fallback(errors, &args, &method, &krate, &sql_doc, probe);
    };

    let parts = checked.parts.iter().map(|p| {
        let Some(p) = p else {
            return quote!(::core::option::Option::None);
        };
        let head = &p.head;
        let middle = &p.middle;
        let tail = &p.tail;
        let filter = match &p.filter {
            Some(f) => quote!(::core::option::Option::Some(#f)),
            None => quote!(::core::option::Option::None),
        };
        quote! {
            ::core::option::Option::Some(
                #krate::__private::Parts { head: #head, middle: #middle, filter: #filter, tail: #tail }
            )
        }
    });
    let column = |name: &Name| name.value.clone();
    let (key, generation, owner, expiry, published) = (
        column(&args.key),
        column(&args.generation),
        column(&args.owner),
        column(&args.expiry),
        column(&args.published),
    );
    let count = roles.values.len();
    let publish_once = args.publish_once;
    let spec = quote! {
        #krate::__private::FencedWrite::new(
            #method_name,
            #krate::__private::Columns {
                table: #table,
                key: #key,
                generation: #generation,
                owner: #owner,
                expiry: #expiry,
                published: #published,
            },
            [#(#parts),*],
            #count,
            #publish_once,
        )
    };
    let rebind = fenced.as_ref().map(|f| f.rebind(&krate));
    let (lease_ident, lease_ty) = lease;
    let lease_expr = quote_spanned!(lease_ty.span()=> #krate::__private::lease(&#lease_ident));
    let values = roles.values.iter().map(|v| {
        let ident = &v.ident;
        if matches!(&v.ty, syn::Type::ImplTrait(_)) {
            quote_spanned!(v.ty.span()=> #krate::__private::value_into(#ident))
        } else {
            quote_spanned!(v.ty.span()=> #krate::__private::value(#ident))
        }
    });
    // Inside a fenced transaction: its store and its lease.
    let call = if fenced.is_some() {
        quote! {
            #krate::__private::execute_in(#lease_ident, &FENCED_WRITE, ::std::vec![#(#values),*])
        }
    } else if let Some(op) = &roles.operation {
        quote! {
            let __fenced_store: &#krate::Store<_> = &#store;
            #krate::__private::execute_op(
                __fenced_store,
                &FENCED_WRITE,
                #lease_expr,
                #krate::__private::operation(&#op),
                ::std::vec![#(#values),*],
            )
        }
    } else {
        quote! {
            let __fenced_store: &#krate::Store<_> = &#store;
            #krate::__private::execute(
                __fenced_store,
                &FENCED_WRITE,
                #lease_expr,
                ::std::vec![#(#values),*],
            )
        }
    };

    let companion = companion(quote! {
        static FENCED_WRITE: #krate::__private::FencedWrite = #spec;
        FENCED_WRITE.sql_for(table, dialect)
    });
    quote! {
        #(#attrs)*
        #vis #sig {
            #probe
            #tracking
            #rebind
            static FENCED_WRITE: #krate::__private::FencedWrite = #spec;
            #call
            .await
        }
        #companion
    }
}

/// In a method that takes `self`, a reference to its `<method>_sql` companion that, in
/// a trait's `impl` (where the companion is refused: ``method `save_sql` is not a member
/// of trait``), fails with a message that names `trait_impl`.
///
/// The companion is an inherent associated function, found first; without it, the
/// path resolves to a local trait's function whose bound no type satisfies, and the
/// bound's `#[diagnostic::on_unimplemented]` message is the error. An attribute on a
/// method cannot see the `impl` it is in, so this is how the mistake is named.
fn companion_probe(args: &Args, method: &Method, sql_fn: &syn::Ident) -> Option<TokenStream> {
    if args.trait_impl || method.sig.receiver().is_none() {
        return None;
    }
    let name = &method.sig.ident;
    let message =
        format!("`{name}` is in a trait's `impl`: add `trait_impl` to its `#[fenced_write(...)]`");
    let label = format!(
        "`#[fenced_write]` generates `{sql_fn}` beside `{name}`, and a trait's `impl` may hold \
         only the trait's items"
    );
    let note =
        format!("with `trait_impl`, `{name}` is generated alone, without its `{sql_fn}` companion");
    let span = name.span();
    Some(quote_spanned! {span=>
        {
            #[allow(dead_code)]
            #[diagnostic::on_unimplemented(message = #message, label = #label, note = #note)]
            trait InherentImpl {}
            #[allow(dead_code)]
            trait Companion {
                fn #sql_fn()
                where
                    Self: InherentImpl,
                {
                }
            }
            impl<T: ?::core::marker::Sized> Companion for T {}
            let _ = Self::#sql_fn;
        }
    })
}

/// Whether `output` names `OperationOutcome` (`fenced::Result<fenced::OperationOutcome>`,
/// or the application's own alias of it): what a method with `operation = ...` returns.
fn returns_operation_outcome(output: &syn::ReturnType) -> bool {
    match output {
        syn::ReturnType::Default => false,
        syn::ReturnType::Type(_, ty) => quote::ToTokens::to_token_stream(ty)
            .to_string()
            .contains("OperationOutcome"),
    }
}
