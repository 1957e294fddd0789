//! `#[fenced_write]` inside a fenced transaction: a method that takes the transaction
//! (`&Fenced<'_, E>`) runs its statement on the transaction's connection. On the lease's
//! own table that is the usual fenced `UPDATE`; on any other table it is an `INSERT`,
//! `UPDATE` or `DELETE` sent as written (placeholders numbered), which the transaction's
//! lock on the lease's row fences. A method that writes another table without taking the
//! transaction does not compile.

use std::ops::Range;

use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::ext::IdentExt;
use syn::{FnArg, Ident, LitStr, Pat, Signature, Type};

use fenced_guard::QualifiedName;
use fenced_guard::dialect::lex;
use fenced_lint::sql::StatementKind;
use fenced_lint::sql::lexer::{self, Token, TokenKind};
use fenced_lint::sql::parse_update;

use crate::args::{self, Args};
use crate::companion;
use crate::declaration;
use crate::literal;
use crate::signature::{self, Method, Roles, StoreSource, ValueParam};
use crate::statement::{self, Dialect, Problem};

/// The parameter that carries the fenced transaction.
pub(crate) struct FencedParam {
    pub(crate) ident: Ident,
    ty: Type,
    index: usize,
    /// The parameter is a `&FencedTransaction`, which derefs to the `Fenced` it holds.
    through_transaction: bool,
}

impl FencedParam {
    /// The body's first statement: the parameter as the `&Fenced` the expansion uses.
    pub(crate) fn rebind(&self, krate: &syn::Path) -> TokenStream {
        let ident = &self.ident;
        if self.through_transaction {
            quote! { let #ident: &#krate::Fenced<'_, _> = &**#ident; }
        } else {
            TokenStream::new()
        }
    }
}

fn is_fenced_attr(attr: &syn::Attribute) -> bool {
    attr.path().is_ident("fenced")
}

/// The typed parameters, receiver left out, in order.
fn typed(sig: &Signature) -> impl Iterator<Item = &syn::PatType> {
    sig.inputs.iter().filter_map(|input| match input {
        FnArg::Typed(p) => Some(p),
        FnArg::Receiver(_) => None,
    })
}

/// The parameter marked `#[fenced]`, else the one whose type is named `Fenced`.
pub(crate) fn fenced_param(sig: &Signature, errors: &mut Vec<syn::Error>) -> Option<FencedParam> {
    let params: Vec<&syn::PatType> = typed(sig).collect();
    let marked: Vec<usize> = (0..params.len())
        .filter(|&i| params[i].attrs.iter().any(is_fenced_attr))
        .collect();
    let candidates = if marked.is_empty() {
        (0..params.len())
            .filter(|&i| {
                signature::type_name(&params[i].ty)
                    .is_some_and(|n| n == "Fenced" || n == "FencedTransaction")
            })
            .collect()
    } else {
        marked
    };
    for &extra in candidates.iter().skip(1) {
        errors.push(syn::Error::new_spanned(
            &params[extra].pat,
            "one fenced transaction per method: take one `&Fenced<'_, E>` (mark it `#[fenced]` \
             when its type has another name)",
        ));
    }
    let index = *candidates.first()?;
    let ty = &*params[index].ty;
    if !matches!(ty, Type::Reference(_)) {
        errors.push(syn::Error::new_spanned(
            ty,
            "take the fenced transaction by reference, e.g. `fenced: &Fenced<'_, E>`: the \
             method sends a statement in it, and the caller still commits it afterwards",
        ));
    }
    let through_transaction = signature::type_name(ty).is_some_and(|n| n == "FencedTransaction");
    match &*params[index].pat {
        Pat::Ident(i) if i.subpat.is_none() => Some(FencedParam {
            ident: i.ident.clone(),
            ty: ty.clone(),
            index,
            through_transaction,
        }),
        other => {
            errors.push(syn::Error::new_spanned(
                other,
                "bind the fenced transaction to a plain name, e.g. `fenced: &Fenced<'_, E>`",
            ));
            None
        }
    }
}

/// The parameters of a method that takes the fenced transaction: the transaction
/// carries the lease and the store, every other parameter is a value.
pub(crate) fn roles(
    sig: &Signature,
    fenced: &FencedParam,
    args: &Args,
    errors: &mut Vec<syn::Error>,
) -> Roles {
    let name = &fenced.ident;
    if let Some(store) = &args.store {
        errors.push(syn::Error::new_spanned(
            store,
            format!(
                "the statement runs on the fenced transaction's connection (`{name}.store()`): \
                 remove `store = ...`"
            ),
        ));
    }
    if let Some(lease) = &args.lease {
        errors.push(syn::Error::new_spanned(
            lease,
            format!("the fenced transaction `{name}` carries its lease: remove `lease = ...`"),
        ));
    }
    let mut values = Vec::new();
    for (i, param) in typed(sig).enumerate() {
        if i == fenced.index {
            continue;
        }
        let ty = &*param.ty;
        let message = if param.attrs.iter().any(|a| a.path().is_ident("lease"))
            || signature::looks_like_lease(ty)
        {
            Some(format!(
                "the fenced transaction `{name}` carries the lease it checked \
                 (`{name}.lease()`): remove this parameter"
            ))
        } else if signature::looks_like_store(ty) {
            Some(format!(
                "the statement runs on the fenced transaction's connection (`{name}.store()`): \
                 remove this parameter"
            ))
        } else {
            None
        };
        if let Some(message) = message {
            errors.push(syn::Error::new_spanned(&param.pat, message));
            continue;
        }
        match &*param.pat {
            Pat::Ident(p) if p.subpat.is_none() => values.push(ValueParam {
                ident: p.ident.clone(),
                ty: ty.clone(),
            }),
            other => errors.push(syn::Error::new_spanned(
                other,
                "bind this parameter to a plain name, e.g. `payload: &str`: the name is what \
                 the SQL's `@payload` placeholder refers to",
            )),
        }
    }
    Roles {
        lease: Some((fenced.ident.clone(), fenced.ty.clone())),
        store: Some(StoreSource::Expr(Box::new(
            syn::parse_quote!(#name.store()),
        ))),
        values,
    }
}

/// The table an `INSERT`, `UPDATE` or `DELETE` writes, when it is not `declared`: as
/// written, and where.
pub(crate) fn other_table(sql: &str, declared: &str) -> Option<(String, Range<usize>)> {
    let shape = parse_update(sql).ok()?;
    if !matches!(
        shape.kind,
        Some(StatementKind::Insert | StatementKind::Update | StatementKind::Delete)
    ) {
        return None;
    }
    let (text, range) = shape.target?;
    // `dbo.ReportPublication` for a declared `ReportPublication` (or the reverse) may be
    // the same table: the lease's table's own checks report it.
    let written = statement::plain_name(&text);
    let declared = declared.to_ascii_lowercase();
    let name = |n: &str| n.rsplit('.').next().unwrap_or_default().to_owned();
    let same = written == declared
        || (name(&written) == name(&declared)
            && !(written.contains('.') && declared.contains('.')));
    (!same).then_some((text, range))
}

/// A statement on another table, checked: its table unquoted, and its text per dialect
/// (in the order of [`Dialect::ALL`]), `None` for a database the method is not written
/// for.
#[derive(Debug)]
pub(crate) struct Checked {
    pub(crate) target: String,
    pub(crate) sql: [Option<String>; 3],
}

/// Checks a statement on a table other than the lease's, as [`statement::check`] does
/// one on the lease's: the portable subset (or, with `only`, that database's), one
/// `INSERT`, `UPDATE` or `DELETE`, every placeholder a value parameter and every value
/// parameter used; then renders it per dialect and re-reads each rendering with that
/// dialect's lexer.
pub(crate) fn check(
    sql: &str,
    method: &str,
    params: &[String],
    only: Option<Dialect>,
) -> (Result<Checked, Vec<Problem>>, Vec<usize>) {
    let problem = |range: Range<usize>, message: String| Problem { range, message };
    let found = match only {
        None => lex::portable_problems(sql),
        Some(dialect) => lex::dialect_problems(dialect.guard(), sql),
    };
    if !found.is_empty() {
        let problems = found
            .into_iter()
            .map(|p| problem(p.range, p.message))
            .collect();
        return (Err(problems), Vec::new());
    }
    let lexed = lexer::lex(sql);
    let tokens = &lexed.tokens;
    let mut problems = Vec::new();
    let (numbered, unused) = statement::placeholders(sql, tokens, method, params, &mut problems);
    let shape = match parse_update(sql) {
        Ok(shape) => shape,
        Err(error) => {
            problems.push(problem(
                error.range,
                format!("cannot parse the SQL: {}", error.message),
            ));
            return (Err(problems), unused);
        }
    };
    let statement_tokens: Vec<&Token> = tokens
        .iter()
        .filter(|t| t.range().start >= shape.range.start && t.range().end <= shape.range.end)
        .collect();
    if let Some(first) = statement_tokens.first()
        && !["INSERT", "UPDATE", "DELETE"]
            .iter()
            .any(|w| statement::is_word(sql, first, w))
    {
        problems.push(problem(
            first.range(),
            "a statement that starts before its `INSERT`, `UPDATE` or `DELETE` (a `WITH` \
             list) is not supported: write the statement directly"
                .to_owned(),
        ));
    }
    let mut depth = 0usize;
    for (i, token) in statement_tokens.iter().enumerate() {
        match token.kind {
            TokenKind::LParen => depth += 1,
            TokenKind::RParen => depth = depth.saturating_sub(1),
            _ if depth == 0 && statement::is_word(sql, token, "ON") => {
                let next = statement_tokens.get(i + 1);
                if let Some(message) = next.and_then(|next| upsert_problem(sql, next, only)) {
                    problems.push(problem(
                        token.range().start..next.map_or(token.range().end, |n| n.range().end),
                        message,
                    ));
                }
            }
            _ if depth == 0
                && (statement::is_word(sql, token, "RETURNING")
                    || statement::is_word(sql, token, "OUTPUT")) =>
            {
                problems.push(problem(
                    token.range(),
                    format!(
                        "`{}` is not supported: the method returns the number of rows written; \
                         read them afterwards in the transaction if you need them",
                        &sql[token.range()]
                    ),
                ));
            }
            _ => {}
        }
    }
    let target = shape.target.as_ref().map(|(text, _)| {
        text.chars()
            .filter(|c| !matches!(c, '"' | '[' | ']' | '`') && !c.is_whitespace())
            .collect::<String>()
    });
    match (&target, &shape.target) {
        (Some(name), Some((text, range))) => {
            if let Some(reason) = args::table_problem(name) {
                problems.push(problem(
                    range.clone(),
                    format!("the table `{text}` cannot be checked against the guard's: {reason}"),
                ));
            }
        }
        _ => problems.push(problem(
            shape.range.clone(),
            "expected the table the statement writes".to_owned(),
        )),
    }
    if !problems.is_empty() {
        return (Err(problems), unused);
    }
    let sql_per_dialect = Dialect::ALL.map(|dialect| {
        only.is_none_or(|only| only == dialect).then(|| {
            statement::render(
                sql,
                &statement_tokens,
                shape.range.clone(),
                &(0..0),
                "",
                &numbered,
                dialect,
            )
        })
    });
    for (dialect, text) in Dialect::ALL.iter().zip(&sql_per_dialect) {
        if let Some(text) = text
            && let Err(message) = sent(*dialect, text, params.len())
        {
            return (Err(vec![problem(0..sql.len(), message)]), unused);
        }
    }
    let checked = Checked {
        target: target.unwrap_or_default(),
        sql: sql_per_dialect,
    };
    (Ok(checked), unused)
}

/// Why an `INSERT ... ON <next>` cannot be sent as written to the databases `only`
/// allows (every one when `None`): SQL Server has no `ON CONFLICT`, and `ON DUPLICATE
/// KEY` is MySQL's.
fn upsert_problem(sql: &str, next: &Token, only: Option<Dialect>) -> Option<String> {
    if statement::is_word(sql, next, "DUPLICATE") {
        return Some(
            "`ON DUPLICATE KEY UPDATE` is MySQL's: none of the databases the guard runs on \
             reads it; on PostgreSQL and SQLite write `ON CONFLICT (...) DO UPDATE`"
                .to_owned(),
        );
    }
    if !statement::is_word(sql, next, "CONFLICT") {
        return None;
    }
    match only {
        None => Some(
            "`ON CONFLICT` is not read the same way by every database: SQL Server has none, \
             so the statement would fail there\nhelp: declare the database it is for, \
             `dialect = \"postgres\"` or `dialect = \"sqlite\"`"
                .to_owned(),
        ),
        Some(Dialect::Mssql) => Some(
            "SQL Server has no `ON CONFLICT`: write the insert and the update as two statements"
                .to_owned(),
        ),
        Some(_) => None,
    }
}

/// Re-reads a rendered statement with `dialect`'s lexer: no comment, no `;`, and no
/// parameter but the numbered ones bound.
fn sent(dialect: Dialect, sql: &str, params: usize) -> Result<(), String> {
    let guard_dialect = match dialect {
        Dialect::Postgres => fenced_guard::Dialect::Postgres,
        Dialect::Sqlite => fenced_guard::Dialect::Sqlite,
        Dialect::Mssql => fenced_guard::Dialect::Mssql,
    };
    let refused = |what: &str| {
        format!(
            "the statement rendered from this SQL would be read differently by the database ({what}), so it is refused: {sql}"
        )
    };
    let lexed = lex::lex(guard_dialect, sql).map_err(|p| refused(&p.message))?;
    if !lexed.comments.is_empty() {
        return Err(refused("a comment"));
    }
    let bound: Vec<String> = (1..=params).map(|n| dialect.placeholder(n)).collect();
    for token in &lexed.tokens {
        let text = &sql[token.range()];
        match token.kind {
            lex::TokenKind::Semicolon => return Err(refused("a `;`")),
            lex::TokenKind::Parameter if !bound.iter().any(|b| b == text) => {
                return Err(refused(&format!("the parameter `{text}`")));
            }
            _ => {}
        }
    }
    Ok(())
}

/// Expands a method whose SQL writes `target`, a table other than the declared one.
pub(crate) fn expand_other(
    args: &Args,
    method: &Method,
    fenced: Option<&FencedParam>,
    (table, target): (&LitStr, &str),
    found: Option<&declaration::Found>,
    mut errors: Vec<syn::Error>,
) -> TokenStream {
    let sig = &method.sig;
    let method_name = sig.ident.to_string();
    let declared = table.value();
    if let Some(why) = declaration::protected(found, &declared, &statement::plain_name(target)) {
        errors.push(syn::Error::new(
            Span::call_site(),
            format!("`{method_name}` writes {why}"),
        ));
    }
    let tracking = found.map(declaration::Found::tracking);
    let Some(lit) = &args.sql else {
        return TokenStream::new();
    };
    let roles = match fenced {
        Some(fenced) => roles(sig, fenced, args, &mut errors),
        None => {
            errors.push(syn::Error::new_spanned(
                sig,
                format!(
                    "`{method_name}` writes `{target}`, a table other than the lease's \
                     `{declared}`: only a fenced transaction fences that write\n\
                     help: take the fenced transaction as a parameter, \
                     `fenced: &fenced::Fenced<'_, E>` (from `Store::transaction` or \
                     `Store::fence`); or, if it is meant to write the lease's table, name \
                     `{declared}` in the SQL"
                ),
            ));
            // The parameters as the method has them, so that the SQL's other problems
            // are reported too; their own errors wait for the transaction.
            signature::roles(
                sig,
                args.lease.as_ref(),
                args.store.as_ref(),
                &mut Vec::new(),
            )
        }
    };
    if args.publish_once {
        errors.push(syn::Error::new(
            Span::call_site(),
            format!(
                "`publish_once` publishes the lease's row, but this statement writes \
                 `{target}`: remove it"
            ),
        ));
    }
    let params: Vec<String> = roles
        .values
        .iter()
        .map(|v| v.ident.unraw().to_string())
        .collect();
    let only = args.dialect.as_ref().map(|(dialect, _)| *dialect);
    let (result, unused) = check(&lit.value(), &method_name, &params, only);
    let checked = match result {
        Ok(checked) => Some(checked),
        Err(problems) => {
            errors.extend(problems.iter().map(|p| literal::sql_error(lit, p)));
            None
        }
    };
    if let Some(checked) = &checked
        && errors.is_empty()
    {
        // What `Fenced` refuses at run time, refused now: the same reading of each
        // database's text, with every table the declaration protects.
        let protected = declaration::protected_names(found, &declared);
        let protected: Vec<&QualifiedName> = protected.iter().collect();
        for (dialect, text) in Dialect::ALL.iter().zip(&checked.sql) {
            let Some(text) = text else { continue };
            if let Some(reason) =
                fenced_guard::__private::refusal(dialect.guard(), text, &protected)
            {
                errors.push(syn::Error::new_spanned(
                    lit,
                    format!(
                        "`{method_name}` would be refused in a fenced transaction on {}: {reason}",
                        dialect.guard()
                    ),
                ));
                break;
            }
        }
    }
    if fenced.is_some() {
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

    let krate = args::krate(args);
    let stripped = signature::stripped(sig);
    let attrs = &method.attrs;
    let vis = &method.vis;
    let sql_doc = format!(
        "The statement `{method_name}` sends on `dialect` inside a fenced transaction on \
         `table` (generated by `#[fenced_write]`); an error when `table` is not the declared \
         one, or `{method_name}` is written for another dialect."
    );
    let companion = |body: TokenStream| companion::companion(args, method, &krate, &sql_doc, body);
    let (Some(checked), Some(fenced), true) = (checked, fenced, errors.is_empty()) else {
        return companion::fallback(errors, args, method, &krate, &sql_doc, None);
    };
    let [postgres, sqlite, mssql] = checked.sql.each_ref().map(|text| match text {
        Some(text) => quote!(::core::option::Option::Some(#text)),
        None => quote!(::core::option::Option::None),
    });
    let target = &checked.target;
    let spec = quote! {
        #krate::__private::TransactionWrite::new(
            #method_name,
            #declared,
            #target,
            [#postgres, #sqlite, #mssql],
        )
    };
    let values = roles.values.iter().map(|v| {
        let ident = &v.ident;
        if matches!(&v.ty, syn::Type::ImplTrait(_)) {
            quote::quote_spanned!(syn::spanned::Spanned::span(&v.ty)=> #krate::__private::value_into(#ident))
        } else {
            quote::quote_spanned!(syn::spanned::Spanned::span(&v.ty)=> #krate::__private::value(#ident))
        }
    });
    let rebind = fenced.rebind(&krate);
    let fenced = &fenced.ident;
    let companion = companion(quote! {
        static TRANSACTION_WRITE: #krate::__private::TransactionWrite = #spec;
        TRANSACTION_WRITE.check_table(table)?;
        TRANSACTION_WRITE.for_dialect(dialect)
    });
    quote! {
        #(#attrs)*
        #vis #stripped {
            #tracking
            #rebind
            static TRANSACTION_WRITE: #krate::__private::TransactionWrite = #spec;
            #krate::__private::execute_other(
                #fenced,
                &TRANSACTION_WRITE,
                ::std::vec![#(#values),*],
            )
            .await
        }
        #companion
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accepted(sql: &str, params: &[&str]) -> Checked {
        let params: Vec<String> = params.iter().map(|p| (*p).to_owned()).collect();
        let (result, unused) = check(sql, "add_line", &params, None);
        assert!(unused.is_empty(), "{sql}: {unused:?}");
        result.unwrap_or_else(|p| panic!("{sql}: {p:?}"))
    }

    fn refused(sql: &str, params: &[&str]) -> Vec<String> {
        refused_for(sql, params, None)
    }

    fn refused_for(sql: &str, params: &[&str], only: Option<Dialect>) -> Vec<String> {
        let params: Vec<String> = params.iter().map(|p| (*p).to_owned()).collect();
        let (result, _) = check(sql, "add_line", &params, only);
        result
            .expect_err("the statement is refused")
            .into_iter()
            .map(|p| p.message)
            .collect()
    }

    #[test]
    fn finds_writes_of_other_tables() {
        let declared = "ReportPublication";
        for sql in [
            "INSERT INTO ReportLine (ReportId, Text) VALUES (@id, @text)",
            "UPDATE dbo.ReportLine SET Text = @text",
            "UPDATE ReportPublicationLine SET Text = @text",
            "DELETE FROM \"ReportLine\" WHERE ReportId = @id",
        ] {
            assert!(other_table(sql, declared).is_some(), "{sql}");
        }
        for sql in [
            // fenced-lint: allow(unfenced-write) a statement the test must not take for another table
            "UPDATE ReportPublication SET Payload = @payload",
            // fenced-lint: allow(unfenced-write) a statement the test must not take for another table
            "UPDATE \"reportpublication\" SET Payload = @payload",
            // fenced-lint: allow(unfenced-write) a statement the test must not take for another table
            "UPDATE dbo.ReportPublication SET Payload = @payload",
            // fenced-lint: allow(fenced-row-delete) a statement the test must not take for another table
            "DELETE FROM ReportPublication",
            "INSERT INTO ReportPublication (ReportId) VALUES (@id)",
            "SELECT 1",
        ] {
            assert!(other_table(sql, declared).is_none(), "{sql}");
        }
    }

    #[test]
    fn renders_the_three_dialects_as_written() {
        let checked = accepted(
            "INSERT INTO dbo.ReportLine (ReportId, \"Text\") -- a line\n VALUES (@id, @text)",
            &["text", "id"],
        );
        assert_eq!(checked.target, "dbo.ReportLine");
        assert_eq!(
            checked.sql,
            [
                "INSERT INTO dbo.ReportLine (ReportId, \"Text\") VALUES ($2, $1)",
                "INSERT INTO dbo.ReportLine (ReportId, \"Text\") VALUES (?2, ?1)",
                "INSERT INTO dbo.ReportLine (ReportId, [Text]) VALUES (@P2, @P1)",
            ]
            .map(|s| Some(s.to_owned()))
        );
        let checked = accepted("DELETE FROM ReportLine WHERE ReportId = @id", &["id"]);
        assert_eq!(
            checked.sql[0].as_deref(),
            Some("DELETE FROM ReportLine WHERE ReportId = $1")
        );
    }

    /// An upsert is refused as SQL for every database (SQL Server has no `ON CONFLICT`),
    /// and accepted, rendered for that database alone, when the method declares
    /// PostgreSQL or SQLite.
    #[test]
    fn upserts_are_written_for_one_database() {
        let sql = "INSERT INTO ReportLine (ReportId, Seq, Text) VALUES (@id, @seq, @text) \
                   ON CONFLICT (ReportId, Seq) DO UPDATE SET Text = @text";
        let params: Vec<String> = ["id", "seq", "text"].map(str::to_owned).to_vec();
        let messages = refused(sql, &["id", "seq", "text"]);
        assert!(
            messages.iter().any(|m| m.contains("SQL Server has none")),
            "{messages:?}"
        );
        for (dialect, placeholder) in [(Dialect::Postgres, "$3"), (Dialect::Sqlite, "?3")] {
            let (result, unused) = check(sql, "add_line", &params, Some(dialect));
            assert!(unused.is_empty());
            let checked = result.unwrap_or_else(|p| panic!("{dialect:?}: {p:?}"));
            let present: Vec<bool> = checked.sql.iter().map(Option::is_some).collect();
            let expected: Vec<bool> = Dialect::ALL.iter().map(|d| *d == dialect).collect();
            assert_eq!(present, expected, "{dialect:?}");
            let text = checked.sql.iter().flatten().next().unwrap();
            assert!(
                text.ends_with(&format!("SET Text = {placeholder}")),
                "{text}"
            );
        }
        let messages = refused_for(sql, &["id", "seq", "text"], Some(Dialect::Mssql));
        assert!(
            messages
                .iter()
                .any(|m| m.contains("SQL Server has no `ON CONFLICT`")),
            "{messages:?}"
        );
        // MySQL's form is refused whatever the method declares.
        let mysql =
            "INSERT INTO ReportLine (ReportId) VALUES (@id) ON DUPLICATE KEY UPDATE Seq = 1";
        for only in [None, Some(Dialect::Postgres), Some(Dialect::Sqlite)] {
            let messages = refused_for(mysql, &["id"], only);
            assert!(
                messages.iter().any(|m| m.contains("MySQL")),
                "{only:?}: {messages:?}"
            );
        }
        // An `ON` elsewhere is no upsert.
        accepted(
            "UPDATE ReportLine SET Text = @text FROM Report r JOIN Other o ON o.Id = r.Id",
            &["text"],
        );
    }

    #[test]
    fn refuses_what_the_fenced_form_refuses() {
        let cases = [
            ("INSERT INTO ReportLine (Text) VALUES ($1)", "`$1`"),
            (
                "INSERT INTO ReportLine (Text) VALUES (@txet)",
                "`@txet` is not a parameter",
            ),
            (
                "INSERT INTO [ReportLine] (Text) VALUES (@text)",
                "`[ReportLine]`",
            ),
            ("DELETE FROM ReportLine; DELETE FROM Other", "`;`"),
            (
                "DELETE FROM ReportLine RETURNING Text",
                "`RETURNING` is not supported",
            ),
            ("INSERT INTO ReportLine (Text) VALUES (E'x')", "`E'"),
        ];
        for (sql, expected) in cases {
            let found = refused(sql, &["text"]);
            assert!(
                found.iter().any(|m| m.contains(expected)),
                "{sql}: {found:?}"
            );
        }
    }
}
