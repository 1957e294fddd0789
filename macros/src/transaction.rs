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
use fenced_sql::lex::{self, Token, TokenKind};
use fenced_sql::{Reading, StatementKind, UpdateShape, Via, parse_update_in};

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
    /// The parameter is a `&FencedTransaction` or a `&DeferredTransaction`, which deref
    /// to the `Fenced` they hold.
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

/// Whether a type's name is one of the guard's transactions that deref to `Fenced`.
fn is_a_transaction(name: &str) -> bool {
    name == "FencedTransaction" || name == "DeferredTransaction"
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
                    .is_some_and(|n| n == "Fenced" || is_a_transaction(&n))
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
    let through_transaction = signature::type_name(ty).is_some_and(|n| is_a_transaction(&n));
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
            // The operation id `operation = ...` names, refused with its own message.
            Pat::Ident(p) if args.operation.as_ref() == Some(&p.ident) => {}
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
        operation: None,
        values,
    }
}

/// The table an `INSERT`, `UPDATE` or `DELETE` writes, when it is not `declared`: as
/// written, and where. Each database's reading decides which table the statement
/// writes; the first that is not `declared` is the answer, so that a statement any
/// database reads as a write of another table takes the other-table path, where every
/// reading is checked.
pub(crate) fn other_table(sql: &str, declared: &str) -> Option<(String, Range<usize>)> {
    Dialect::ALL.into_iter().find_map(|dialect| {
        let d = dialect.sql();
        let lexed = lex::lex_caller(d, sql).ok()?;
        let shape = parse_update_in(Reading::Dialect(d), sql, &lexed.tokens).ok()?;
        if !matches!(
            shape.kind,
            Some(StatementKind::Insert | StatementKind::Update | StatementKind::Delete)
        ) {
            return None;
        }
        let (text, range) = shape.target?;
        (!same_table(&text, declared)).then_some((text, range))
    })
}

/// Whether the table written as `text` may be `declared`: `dbo.ReportPublication` for a
/// declared `ReportPublication` (or the reverse) may be the same table, which the lease
/// table's own checks then report.
fn same_table(text: &str, declared: &str) -> bool {
    let written = statement::plain_name(text);
    let declared = declared.to_ascii_lowercase();
    let name = |n: &str| n.rsplit('.').next().unwrap_or_default().to_owned();
    written == declared
        || (name(&written) == name(&declared) && !(written.contains('.') && declared.contains('.')))
}

/// Which of the other-table checks run. All of them do in the macro; the differential
/// test switches the databases' own readings and the protected-table refusals off for
/// its negative control.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Checks {
    /// Each database's text is read, parsed and rendered as that database reads it, and
    /// refused where that reading splits it otherwise than the tolerant one; without
    /// it, by the tolerant reading of all three at once.
    pub(crate) own_reading: bool,
    /// A reading that writes the lease's own table refuses the statement. (The
    /// refusals of the declared tables, [`declaration::protected`] and
    /// [`protected_target`], and of the guard's screen, [`screened`], are the caller's
    /// to run or leave out with it.)
    pub(crate) protected: bool,
}

impl Checks {
    pub(crate) const ALL: Checks = Checks {
        own_reading: true,
        protected: true,
    };
}

/// A statement on another table, checked: its table unquoted, and its text per dialect
/// (in the order of [`Dialect::ALL`]), `None` for a database the method is not written
/// for.
#[derive(Debug)]
pub(crate) struct Checked {
    pub(crate) target: String,
    pub(crate) sql: [Option<String>; 3],
}

/// Checks a statement on a table other than `declared`, the lease's, as
/// [`statement::check`] does one on the lease's: the portable subset (or, with `only`,
/// that database's), and then each database's own reading of it: one `INSERT`,
/// `UPDATE` or `DELETE` that writes, by that database's rules, one table that is not
/// the lease's, the same in every database, through no construct the macro cannot
/// follow; every placeholder a value parameter and every value parameter used. Each
/// database's text is rendered from its reading and re-read by its lexer.
pub(crate) fn check(
    sql: &str,
    declared: &str,
    method: &str,
    params: &[String],
    only: Option<Dialect>,
) -> (Result<Checked, Vec<Problem>>, Vec<usize>) {
    check_with(sql, declared, method, params, only, Checks::ALL)
}

/// [`check`], with the checks chosen.
pub(crate) fn check_with(
    sql: &str,
    declared: &str,
    method: &str,
    params: &[String],
    only: Option<Dialect>,
    checks: Checks,
) -> (Result<Checked, Vec<Problem>>, Vec<usize>) {
    let found = match only {
        None => fenced_sql::portable::portable_problems(sql),
        Some(dialect) => fenced_sql::portable::dialect_problems(dialect.sql(), sql),
    };
    if !found.is_empty() {
        let problems = found
            .into_iter()
            .map(|p| Problem {
                range: p.range,
                message: p.message,
            })
            .collect();
        return (Err(problems), Vec::new());
    }
    let mut problems = Vec::new();
    let mut unused = Vec::new();
    let mut sql_per_dialect: [Option<String>; 3] = [None, None, None];
    let mut targets: Vec<(Dialect, String)> = Vec::new();
    // The databases that read the statement as a write of the lease's own table.
    let mut lease_writers: Vec<Dialect> = Vec::new();
    let mut lease_written = None;
    let dialects = Dialect::ALL
        .into_iter()
        .filter(|d| only.is_none_or(|only| only == *d));
    for dialect in dialects {
        let read = match statement::read(sql, dialect, checks.own_reading) {
            Ok(read) => read,
            Err(p) => {
                statement::add(&mut problems, p);
                continue;
            }
        };
        if checks.own_reading
            && let Some(p) = statement::disagreement(sql, dialect)
        {
            statement::add(
                &mut problems,
                Problem {
                    range: p.range,
                    message: p.message,
                },
            );
            continue;
        }
        let mut found = Vec::new();
        let (numbered, not_used) =
            statement::placeholders(sql, &read.lexed.tokens, method, params, &mut found);
        unused = not_used;
        let target = written(sql, &read, dialect, only, &mut found);
        let writes_lease = checks.protected
            && target
                .as_ref()
                .is_some_and(|(name, ..)| same_table(name, declared));
        if let Some((name, tokens, _)) = &target
            && writes_lease
        {
            lease_writers.push(dialect);
            lease_written = tokens
                .iter()
                .find(|t| statement::plain_name(&sql[t.range()]) == name.to_ascii_lowercase())
                .map(|t| t.range());
        }
        match target {
            Some((target, statement_tokens, range)) if found.is_empty() && !writes_lease => {
                let text = statement::render(
                    sql,
                    &statement_tokens,
                    range,
                    &(0..0),
                    "",
                    &numbered,
                    dialect,
                );
                let kinds: Vec<TokenKind> = statement_tokens.iter().map(|t| t.kind).collect();
                match sent(dialect, &text, &kinds, params.len()) {
                    Ok(()) => sql_per_dialect[dialect.index()] = Some(text),
                    Err(message) => found.push(Problem {
                        range: 0..sql.len(),
                        message,
                    }),
                }
                targets.push((dialect, target));
            }
            _ => {}
        }
        found
            .into_iter()
            .for_each(|p| statement::add(&mut problems, p));
    }
    if !lease_writers.is_empty() {
        let names: Vec<&str> = lease_writers.iter().map(|d| d.sql().name()).collect();
        let readers = match names.as_slice() {
            [init @ .., last] if !init.is_empty() => format!("{} and {last}", init.join(", ")),
            _ => names.join(""),
        };
        problems.push(Problem {
            range: lease_written.unwrap_or(0..sql.len()),
            message: format!(
                "{readers} {} this statement as a write of `{declared}`, the lease's own \
                 table, which a fenced transaction writes only through `Fenced::store()`: \
                 name the other table the statement writes plainly",
                if lease_writers.len() == 1 {
                    "reads"
                } else {
                    "read"
                }
            ),
        });
    }
    // One table, whichever database runs the statement.
    if problems.is_empty()
        && let Some((first, target)) = targets.first()
        && let Some((other, theirs)) = targets
            .iter()
            .find(|(_, t)| !t.eq_ignore_ascii_case(target))
    {
        problems.push(Problem {
            range: 0..sql.len(),
            message: format!(
                "{} writes `{target}` and {} writes `{theirs}`: name the table the statement \
                 writes plainly, as every database reads it",
                first.sql().name(),
                other.sql().name()
            ),
        });
    }
    if !problems.is_empty() {
        return (Err(problems), unused);
    }
    let checked = Checked {
        target: targets
            .into_iter()
            .next()
            .map(|(_, t)| t)
            .unwrap_or_default(),
        sql: sql_per_dialect,
    };
    (Ok(checked), unused)
}

/// The table `dialect`'s reading of `sql` writes, unquoted, with the statement's tokens
/// and extent; the problems of the statement as that reading reads it go to `problems`.
fn written<'t>(
    sql: &str,
    read: &'t statement::Read,
    dialect: Dialect,
    only: Option<Dialect>,
    problems: &mut Vec<Problem>,
) -> Option<(String, Vec<&'t Token>, Range<usize>)> {
    let problem = |range: Range<usize>, message: String| Problem { range, message };
    let tokens = &read.lexed.tokens;
    let shape = match parse_update_in(read.reading, sql, tokens) {
        Ok(shape) => shape,
        Err(error) => {
            problems.push(problem(
                error.range,
                format!("cannot parse the SQL: {}", error.message),
            ));
            return None;
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
    problems.extend(unfollowed(sql, &shape, &statement_tokens, dialect, only));
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
    let Some((text, range)) = &shape.target else {
        problems.push(problem(
            shape.range.clone(),
            "expected the table the statement writes".to_owned(),
        ));
        return None;
    };
    let name = text
        .chars()
        .filter(|c| !matches!(c, '"' | '[' | ']' | '`') && !c.is_whitespace())
        .collect::<String>();
    if let Some(reason) = args::table_problem(&name) {
        problems.push(problem(
            range.clone(),
            format!("the table `{text}` cannot be checked against the guard's: {reason}"),
        ));
    }
    Some((name, statement_tokens, shape.range))
}

/// What `dialect`'s reading of the statement does that the macro cannot follow to the
/// one table it writes: a write through an alias or a derived table (SQL Server's own
/// forms), a statement inside the statement, a procedure's rows inserted.
fn unfollowed(
    sql: &str,
    shape: &UpdateShape,
    tokens: &[&Token],
    dialect: Dialect,
    only: Option<Dialect>,
) -> Vec<Problem> {
    let mut problems = Vec::new();
    let keyword = tokens.first().map_or(0..0, |t| t.range());
    let written = shape.target.as_ref().map_or("", |(text, _)| text.as_str());
    match &shape.via {
        Via::Name | Via::Cte(_) => {}
        // SQL Server's alias rule, in SQL written for SQL Server alone: what it writes
        // is certain.
        Via::Alias(_) if only == Some(Dialect::Mssql) => {}
        Via::Alias(alias) => problems.push(Problem {
            range: alias.clone(),
            message: format!(
                "`{}` is an alias the `FROM` list gives `{written}`: {} writes `{written}` \
                 through it, while PostgreSQL and SQLite write a table named `{}`; name the \
                 table the statement writes after `{}`, and give the `FROM` list's tables \
                 aliases of their own; or, for SQL written for SQL Server only, add \
                 `dialect = \"mssql\"`",
                &sql[alias.clone()],
                dialect.sql().name(),
                &sql[alias.clone()],
                &sql[keyword.clone()]
            ),
        }),
        Via::DerivedTable(alias) => problems.push(Problem {
            range: alias.clone(),
            message: format!(
                "`{}` is a derived table's alias: {} writes through it to a table it selects \
                 from, which the macro cannot check; name the table the statement writes \
                 after `{}`",
                &sql[alias.clone()],
                dialect.sql().name(),
                &sql[keyword.clone()]
            ),
        }),
        _ => problems.push(Problem {
            range: keyword.clone(),
            message: "the statement names the table it writes in a way the macro cannot \
                      follow: name the table after its keyword"
                .to_owned(),
        }),
    }
    for nested in &shape.nested {
        problems.push(Problem {
            range: nested.clone(),
            message: format!(
                "`{}` inside the statement writes a table of its own, which the macro cannot \
                 check: write one statement per method",
                &sql[nested.clone()]
            ),
        });
    }
    if shape.kind == Some(StatementKind::Insert)
        && let Some(exec) = tokens
            .iter()
            .find(|t| statement::is_word(sql, t, "EXEC") || statement::is_word(sql, t, "EXECUTE"))
    {
        problems.push(Problem {
            range: exec.range(),
            message: "`INSERT ... EXEC` inserts a procedure's rows, and the procedure writes \
                      what it writes, unseen by the macro: insert the rows with \
                      `VALUES (...)` or `SELECT`"
                .to_owned(),
        });
    }
    problems
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

/// Re-reads a rendered statement with `dialect`'s lexer: the tokens of the kinds the
/// macro rendered (`kinds`, the reading it checked), no comment, no `;`, and no
/// parameter but the numbered ones bound.
fn sent(dialect: Dialect, sql: &str, kinds: &[TokenKind], params: usize) -> Result<(), String> {
    let refused = |what: &str| {
        format!(
            "the statement rendered from this SQL would be read differently by the database ({what}), so it is refused: {sql}"
        )
    };
    let lexed = lex::lex_as(dialect.sql(), sql).map_err(|p| refused(&p.message))?;
    if !lexed.comments.is_empty() {
        return Err(refused("a comment"));
    }
    let read: Vec<TokenKind> = lexed.tokens.iter().map(|t| t.kind).collect();
    if read != kinds {
        let at = read.iter().zip(kinds).position(|(a, b)| a != b);
        let token = at
            .or(Some(read.len().min(kinds.len())))
            .and_then(|i| lexed.tokens.get(i))
            .map_or("its end", |t| &sql[t.range()]);
        return Err(refused(&format!("tokens split otherwise at `{token}`")));
    }
    let bound: Vec<String> = (1..=params).map(|n| dialect.placeholder(n)).collect();
    for token in &lexed.tokens {
        let text = &sql[token.range()];
        match token.kind {
            TokenKind::Semicolon => return Err(refused("a `;`")),
            TokenKind::Parameter if !bound.iter().any(|b| b == text) => {
                return Err(refused(&format!("the parameter `{text}`")));
            }
            _ => {}
        }
    }
    Ok(())
}

/// The protected table `checked` writes, when every database's reading of it writes
/// another table than `target`, the first reading's that named one other than the
/// lease's `declared` (SQL Server's alias, read alone); `target` itself the caller
/// checks with [`declaration::protected`] first.
pub(crate) fn protected_target(
    found: Option<&declaration::Found>,
    declared: &str,
    target: &str,
    checked: &Checked,
) -> Option<String> {
    if checked
        .target
        .eq_ignore_ascii_case(&statement::plain_name(target))
    {
        return None;
    }
    declaration::protected(found, declared, &checked.target)
}

/// What `Fenced` refuses at run time, refused at compile time: the guard's screen over
/// each database's text, with every table the declaration protects. The first database
/// whose text it refuses, and why.
pub(crate) fn screened(
    found: Option<&declaration::Found>,
    declared: &str,
    checked: &Checked,
) -> Option<(Dialect, String)> {
    let protected = declaration::protected_names(found, declared);
    let protected: Vec<&QualifiedName> = protected.iter().collect();
    Dialect::ALL
        .into_iter()
        .zip(&checked.sql)
        .find_map(|(dialect, text)| {
            let text = text.as_deref()?;
            fenced_guard::__private::refusal(dialect.guard(), text, &protected)
                .map(|reason| (dialect, reason))
        })
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
                args.operation.as_ref(),
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
    if let Some(op) = &args.operation {
        errors.push(syn::Error::new_spanned(
            op,
            format!(
                "a statement on `{target}` runs inside a fenced transaction, which carries the \
                 operation id for all its writes: remove `operation` and record the id with \
                 `Fenced::record(op)` before the transaction's writes"
            ),
        ));
    }
    let params: Vec<String> = roles
        .values
        .iter()
        .map(|v| v.ident.unraw().to_string())
        .collect();
    let only = args.dialect.as_ref().map(|(dialect, _)| *dialect);
    let (result, unused) = check(&lit.value(), &declared, &method_name, &params, only);
    let checked = match result {
        Ok(checked) => Some(checked),
        Err(problems) => {
            errors.extend(problems.iter().map(|p| literal::sql_error(lit, p)));
            None
        }
    };
    if let Some(checked) = &checked
        && let Some(why) = protected_target(found, &declared, target, checked)
    {
        errors.push(syn::Error::new(
            Span::call_site(),
            format!("`{method_name}` writes {why}"),
        ));
    }
    if let Some(checked) = &checked
        && errors.is_empty()
        && let Some((dialect, reason)) = screened(found, &declared, checked)
    {
        errors.push(syn::Error::new_spanned(
            lit,
            format!(
                "`{method_name}` would be refused in a fenced transaction on {}: {reason}",
                dialect.guard()
            ),
        ));
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
        let (result, unused) = check(sql, "ReportPublication", "add_line", &params, None);
        assert!(unused.is_empty(), "{sql}: {unused:?}");
        result.unwrap_or_else(|p| panic!("{sql}: {p:?}"))
    }

    fn refused(sql: &str, params: &[&str]) -> Vec<String> {
        refused_for(sql, params, None)
    }

    fn refused_for(sql: &str, params: &[&str], only: Option<Dialect>) -> Vec<String> {
        let params: Vec<String> = params.iter().map(|p| (*p).to_owned()).collect();
        let (result, _) = check(sql, "ReportPublication", "add_line", &params, only);
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
            let (result, unused) =
                check(sql, "ReportPublication", "add_line", &params, Some(dialect));
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

    /// Which table a statement writes is each database's to say: where they differ, or
    /// a reading goes through what the macro cannot follow, the statement is refused,
    /// naming the construct.
    #[test]
    fn each_database_decides_which_table_is_written() {
        let alias = "UPDATE Report SET Text = @text FROM ReportLine AS Report";
        // SQL Server reads it as a write of `ReportLine`: the other-table path.
        assert_eq!(
            other_table(alias, "Report").map(|(t, _)| t),
            Some("ReportLine".to_owned())
        );
        let params = ["text".to_owned()];
        let refused = |sql: &str, only| {
            check(sql, "Report", "add_line", &params, only)
                .0
                .expect_err("refused")
                .into_iter()
                .map(|p| p.message)
                .collect::<Vec<_>>()
        };
        let found = refused(alias, None);
        assert!(
            found
                .iter()
                .any(|m| m.contains("is an alias the `FROM` list gives")),
            "{found:?}"
        );
        assert!(
            found.iter().any(|m| m
                .starts_with("PostgreSQL and SQLite read this statement as a write of `Report`")),
            "{found:?}"
        );
        // The control: SQL Server alone writes `ReportLine`, certainly.
        let (result, _) = check(
            "UPDATE l SET Text = @text FROM ReportLine AS l",
            "Report",
            "add_line",
            &params,
            Some(Dialect::Mssql),
        );
        assert_eq!(
            result.expect("accepted for SQL Server").target,
            "ReportLine"
        );
        let derived = refused(
            "UPDATE r SET Text = @text FROM (SELECT * FROM ReportLine) AS r",
            Some(Dialect::Mssql),
        );
        assert!(derived[0].contains("derived table's alias"), "{derived:?}");
        let nested = refused(
            "INSERT INTO ReportLine (Text) SELECT @text FROM (DELETE FROM Queue OUTPUT deleted.Id) AS d",
            Some(Dialect::Mssql),
        );
        assert!(
            nested[0].contains("`DELETE` inside the statement"),
            "{nested:?}"
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
