//! The annotated method: its signature, and which parameter is the lease, which the
//! store, and which are values bound to `@name` placeholders.

use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::parse::{Parse, ParseStream};
use syn::{Attribute, Block, FnArg, Ident, Pat, Signature, Token, Type, Visibility};

/// A function or method, with a body or (as `#[fenced_write]` wants) without one.
pub(crate) struct Method {
    pub(crate) attrs: Vec<Attribute>,
    pub(crate) vis: Visibility,
    pub(crate) sig: Signature,
    pub(crate) body: Option<Block>,
}

impl Parse for Method {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let attrs = input.call(Attribute::parse_outer)?;
        let vis: Visibility = input.parse()?;
        let sig: Signature = input.parse()?;
        let body = if input.peek(Token![;]) {
            input.parse::<Token![;]>()?;
            None
        } else {
            Some(input.parse()?)
        };
        Ok(Method {
            attrs,
            vis,
            sig,
            body,
        })
    }
}

/// A value parameter: bound, in declaration order, to the placeholder of its name.
pub(crate) struct ValueParam {
    pub(crate) ident: Ident,
    pub(crate) ty: Type,
}

/// Where the method's store comes from.
pub(crate) enum StoreSource {
    /// A parameter of type `&Store<B>`.
    Param(Ident),
    /// The attribute's `store = <expr>`.
    Expr(Box<syn::Expr>),
}

/// The parameters sorted by role.
pub(crate) struct Roles {
    pub(crate) lease: Option<(Ident, Type)>,
    pub(crate) store: Option<StoreSource>,
    /// The parameter `operation = ...` names: the write's operation id, not a value.
    pub(crate) operation: Option<Ident>,
    pub(crate) values: Vec<ValueParam>,
}

fn is_lease_attr(attr: &Attribute) -> bool {
    attr.path().is_ident("lease")
}

/// The signature without the `#[lease]` and `#[fenced]` markers, which only this macro understands.
pub(crate) fn stripped(sig: &Signature) -> Signature {
    let mut sig = sig.clone();
    for input in &mut sig.inputs {
        if let FnArg::Typed(pat) = input {
            pat.attrs
                .retain(|a| !is_lease_attr(a) && !a.path().is_ident("fenced"));
        }
    }
    sig
}

/// The last path segment of a type, looking through references.
pub(crate) fn type_name(ty: &Type) -> Option<String> {
    match ty {
        Type::Reference(r) => type_name(&r.elem),
        Type::Paren(p) => type_name(&p.elem),
        Type::Group(g) => type_name(&g.elem),
        Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
        _ => None,
    }
}

pub(crate) fn looks_like_lease(ty: &Type) -> bool {
    type_name(ty).is_some_and(|n| n.ends_with("Lease"))
}

/// `Store<B>`, by reference or inside the smart pointers a service shares one through
/// (`Arc<Store<B>>`, `&Rc<Store<B>>`, `Box<Store<B>>`): the expansion reaches the store
/// by deref coercion.
pub(crate) fn looks_like_store(ty: &Type) -> bool {
    match ty {
        Type::Reference(r) => looks_like_store(&r.elem),
        Type::Paren(p) => looks_like_store(&p.elem),
        Type::Group(g) => looks_like_store(&g.elem),
        Type::Path(p) => p.path.segments.last().is_some_and(|last| {
            last.ident == "Store"
                || (["Arc", "Rc", "Box"].iter().any(|s| last.ident == s)
                    && matches!(&last.arguments, syn::PathArguments::AngleBracketed(args)
                        if matches!(args.args.first(),
                            Some(syn::GenericArgument::Type(inner)) if looks_like_store(inner))))
        }),
        _ => false,
    }
}

/// Sorts the parameters; `errors` collects every problem.
pub(crate) fn roles(
    sig: &Signature,
    lease_option: Option<&Ident>,
    store_option: Option<&syn::Expr>,
    operation_option: Option<&Ident>,
    errors: &mut Vec<syn::Error>,
) -> Roles {
    struct Param<'a> {
        ident: Option<&'a Ident>,
        pat: &'a Pat,
        ty: &'a Type,
        marked: bool,
    }
    let params: Vec<Param<'_>> = sig
        .inputs
        .iter()
        .filter_map(|input| match input {
            FnArg::Receiver(_) => None,
            FnArg::Typed(p) => Some(Param {
                ident: match &*p.pat {
                    Pat::Ident(i) if i.subpat.is_none() => Some(&i.ident),
                    _ => None,
                },
                pat: &p.pat,
                ty: &p.ty,
                marked: p.attrs.iter().any(is_lease_attr),
            }),
        })
        .collect();

    // The lease: `#[lease]`, or `lease = name`, or else by type name.
    let marked: Vec<usize> = (0..params.len()).filter(|&i| params[i].marked).collect();
    let lease_index: Option<usize> = if let Some(name) = lease_option {
        match params.iter().position(|p| p.ident == Some(name)) {
            Some(i) => Some(i),
            None => {
                errors.push(syn::Error::new_spanned(
                    name,
                    format!(
                        "`lease = {name}` names no parameter of `{}`: name the parameter that \
                         carries the lease",
                        sig.ident
                    ),
                ));
                None
            }
        }
    } else if !marked.is_empty() {
        for &extra in &marked[1..] {
            errors.push(syn::Error::new_spanned(
                params[extra].pat,
                "only one parameter can be marked `#[lease]`: the lease that authorises this write",
            ));
        }
        Some(marked[0])
    } else {
        let candidates: Vec<usize> = (0..params.len())
            .filter(|&i| looks_like_lease(params[i].ty))
            .collect();
        if candidates.len() > 1 {
            for &i in &candidates {
                errors.push(syn::Error::new_spanned(
                    params[i].pat,
                    "several parameters look like leases: mark the one that authorises this write \
                     with `#[lease]`",
                ));
            }
        }
        candidates.first().copied()
    };
    if lease_index.is_none() && lease_option.is_none() {
        errors.push(syn::Error::new_spanned(
            sig,
            format!(
                "`{}` writes a fenced table but takes no lease\n\
                 help: add the lease that authorises the write as a parameter, e.g. \
                 `lease: &Lease`, or your own lease type that implements `AsLease` marked \
                 `#[lease] lease: &ReportLease`",
                sig.ident
            ),
        ));
    }

    let store_index = if store_option.is_some() {
        None
    } else {
        params
            .iter()
            .enumerate()
            .position(|(i, p)| Some(i) != lease_index && looks_like_store(p.ty))
    };
    let store = match (store_option, store_index) {
        (Some(expr), _) => Some(StoreSource::Expr(Box::new(expr.clone()))),
        (None, Some(i)) => params[i].ident.cloned().map(StoreSource::Param),
        (None, None) => {
            errors.push(syn::Error::new_spanned(
                sig,
                format!(
                    "`{}` has no store to send its statement to\n\
                     help: name it in the attribute, e.g. `store = self.store`, or take a \
                     parameter `store: &Store<B>`",
                    sig.ident
                ),
            ));
            None
        }
    };

    // A parameter the `store = ...` expression reads (`store = repo.store`) is where the
    // store comes from, not a value.
    let mut store_reads = Vec::new();
    if let Some(expr) = store_option {
        idents(expr.to_token_stream(), &mut store_reads);
    }
    let mut operation = None;
    if let Some(name) = operation_option {
        if params.iter().any(|p| p.ident == Some(name)) {
            operation = Some(name.clone());
        } else {
            errors.push(syn::Error::new_spanned(
                name,
                format!(
                    "`operation = {name}` names no parameter of `{}`: name the parameter that \
                     carries the write's operation id, e.g. `op: Uuid`",
                    sig.ident
                ),
            ));
        }
    }
    let mut values = Vec::new();
    let mut lease = None;
    for (i, param) in params.iter().enumerate() {
        if param.ident.is_some_and(|ident| store_reads.contains(ident)) {
            continue;
        }
        if param.ident.is_some() && param.ident == operation.as_ref() {
            continue;
        }
        let Some(ident) = param.ident else {
            errors.push(syn::Error::new_spanned(
                param.pat,
                "bind this parameter to a plain name, e.g. `payload: &str`: the name is what \
                 the SQL's `@payload` placeholder refers to",
            ));
            continue;
        };
        if Some(i) == lease_index {
            lease = Some((ident.clone(), param.ty.clone()));
        } else if Some(i) == store_index {
            continue;
        } else {
            values.push(ValueParam {
                ident: ident.clone(),
                ty: param.ty.clone(),
            });
        }
    }
    Roles {
        lease,
        store,
        operation,
        values,
    }
}

/// Every identifier in `tokens`, groups included.
fn idents(tokens: TokenStream, out: &mut Vec<Ident>) {
    for tree in tokens {
        match tree {
            proc_macro2::TokenTree::Ident(ident) => out.push(ident),
            proc_macro2::TokenTree::Group(group) => idents(group.stream(), out),
            _ => {}
        }
    }
}

/// Checks what the generated body needs: `async`, a return type, no body written.
pub(crate) fn shape(method: &Method, errors: &mut Vec<syn::Error>) {
    let sig = &method.sig;
    if sig.asyncness.is_none() {
        errors.push(syn::Error::new_spanned(
            sig.fn_token,
            format!(
                "a `#[fenced_write]` method sends a statement to the database: declare it \
                 `async fn {}`",
                sig.ident
            ),
        ));
    }
    if matches!(sig.output, syn::ReturnType::Default) {
        errors.push(syn::Error::new_spanned(
            sig,
            "declare the return type `-> fenced::Result<fenced::Outcome>`: the write is either \
             applied or refused by the fence",
        ));
    }
    if let Some(body) = &method.body {
        errors.push(syn::Error::new_spanned(
            body,
            "the body of a `#[fenced_write]` method is generated from its SQL: replace `{ ... }` \
             with `;`",
        ));
    }
}

impl ToTokens for StoreSource {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        match self {
            StoreSource::Param(ident) => ident.to_tokens(tokens),
            StoreSource::Expr(expr) => expr.to_tokens(tokens),
        }
    }
}
