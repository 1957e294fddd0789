//! The attribute's arguments: `#[fenced_write(table = "...", sql = "...", ...)]`.

use syn::meta::ParseNestedMeta;
use syn::{Expr, Ident, LitStr, Path};

use crate::statement::Dialect;

/// The options, in the order the documentation lists them.
const OPTIONS: &str = "`table`, `sql`, `store`, `lease`, `operation`, `publish_once`, \
                       `trait_impl`, `dialect`, `key`, `generation`, `owner`, `expiry`, \
                       `published`, `epoch`, `declarations`, `crate`";

/// A column name as given, or the article's default.
#[derive(Debug)]
pub(crate) struct Name {
    pub(crate) value: String,
    /// The literal it came from, for errors.
    pub(crate) literal: Option<LitStr>,
}

impl Name {
    fn default(value: &str) -> Self {
        Name {
            value: value.to_owned(),
            literal: None,
        }
    }
}

/// The parsed attribute.
#[derive(Debug)]
pub(crate) struct Args {
    pub(crate) table: Option<LitStr>,
    pub(crate) sql: Option<LitStr>,
    pub(crate) store: Option<Expr>,
    pub(crate) lease: Option<Ident>,
    /// The parameter carrying the write's operation id, recorded with it.
    pub(crate) operation: Option<Ident>,
    pub(crate) publish_once: bool,
    /// The method implements a trait's: no `<method>_sql` companion beside it.
    pub(crate) trait_impl: bool,
    /// The one database the SQL is written for, and the literal naming it.
    pub(crate) dialect: Option<(Dialect, LitStr)>,
    pub(crate) key: Name,
    pub(crate) generation: Name,
    pub(crate) owner: Name,
    pub(crate) expiry: Name,
    pub(crate) published: Name,
    pub(crate) epoch: Name,
    /// The declaration file, relative to the crate's manifest directory, instead of
    /// the nearest `fenced.toml`.
    pub(crate) declarations: Option<LitStr>,
    pub(crate) krate: Option<Path>,
}

impl Default for Args {
    fn default() -> Self {
        Args {
            table: None,
            sql: None,
            store: None,
            lease: None,
            operation: None,
            publish_once: false,
            trait_impl: false,
            dialect: None,
            key: Name::default("ReportId"),
            generation: Name::default("Generation"),
            owner: Name::default("LeaseOwner"),
            expiry: Name::default("LeaseUntilUtc"),
            published: Name::default("PublishedGeneration"),
            epoch: Name::default("LeaseEpoch"),
            declarations: None,
            krate: None,
        }
    }
}

fn string(meta: &ParseNestedMeta<'_>, example: &str) -> syn::Result<LitStr> {
    let value = meta.value()?;
    let expr: Expr = value.parse()?;
    match expr {
        Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(lit),
            ..
        }) => Ok(lit),
        other => Err(syn::Error::new_spanned(
            other,
            format!("expected a string literal, e.g. `{example}`"),
        )),
    }
}

fn once<T>(slot: &mut Option<T>, meta: &ParseNestedMeta<'_>, value: T) -> syn::Result<()> {
    if slot.is_some() {
        return Err(meta.error("this option is given twice; keep one"));
    }
    *slot = Some(value);
    Ok(())
}

fn flag(slot: &mut bool, meta: &ParseNestedMeta<'_>, name: &str) -> syn::Result<()> {
    if !meta.input.is_empty() && !meta.input.peek(syn::Token![,]) {
        return Err(meta.error(format!("`{name}` is a flag: write it without a value")));
    }
    if *slot {
        return Err(meta.error("this option is given twice; keep one"));
    }
    *slot = true;
    Ok(())
}

fn column(name: &mut Name, meta: &ParseNestedMeta<'_>, example: &str) -> syn::Result<()> {
    if name.literal.is_some() {
        return Err(meta.error("this option is given twice; keep one"));
    }
    let lit = string(meta, example)?;
    name.value = lit.value();
    name.literal = Some(lit);
    Ok(())
}

impl Args {
    /// Parses one `name = value` or flag.
    pub(crate) fn parse_one(&mut self, meta: ParseNestedMeta<'_>) -> syn::Result<()> {
        let Some(ident) = meta.path.get_ident().map(ToString::to_string) else {
            return Err(meta.error(format!("expected one of {OPTIONS}")));
        };
        match ident.as_str() {
            "table" => {
                let lit = string(&meta, "table = \"dbo.ReportPublication\"")?;
                once(&mut self.table, &meta, lit)
            }
            "sql" => {
                let lit = string(
                    &meta,
                    "sql = \"UPDATE ReportPublication SET Payload = @payload\"",
                )?;
                once(&mut self.sql, &meta, lit)
            }
            "store" => {
                let expr: Expr = meta.value()?.parse()?;
                once(&mut self.store, &meta, expr)
            }
            "lease" => {
                let ident: Ident = meta.value()?.parse().map_err(|e| {
                    syn::Error::new(e.span(), "expected a parameter name, e.g. `lease = lease`")
                })?;
                once(&mut self.lease, &meta, ident)
            }
            "operation" => {
                let ident: Ident = meta.value()?.parse().map_err(|e| {
                    syn::Error::new(e.span(), "expected a parameter name, e.g. `operation = op`")
                })?;
                once(&mut self.operation, &meta, ident)
            }
            "publish_once" => flag(&mut self.publish_once, &meta, "publish_once"),
            "trait_impl" => flag(&mut self.trait_impl, &meta, "trait_impl"),
            "dialect" => {
                let lit = string(&meta, "dialect = \"postgres\"")?;
                let Some(dialect) = Dialect::from_option(&lit.value()) else {
                    return Err(syn::Error::new_spanned(
                        &lit,
                        format!(
                            "unknown dialect `{}`: write `postgres`, `sqlite` or `mssql`, or leave \
                             `dialect` out for SQL that every database reads the same way",
                            lit.value()
                        ),
                    ));
                };
                once(&mut self.dialect, &meta, (dialect, lit))
            }
            "key" => column(&mut self.key, &meta, "key = \"ReportId\""),
            "generation" => column(&mut self.generation, &meta, "generation = \"Generation\""),
            "owner" => column(&mut self.owner, &meta, "owner = \"LeaseOwner\""),
            "expiry" => column(&mut self.expiry, &meta, "expiry = \"LeaseUntilUtc\""),
            "published" => column(
                &mut self.published,
                &meta,
                "published = \"PublishedGeneration\"",
            ),
            "epoch" => column(&mut self.epoch, &meta, "epoch = \"LeaseEpoch\""),
            "declarations" => {
                let lit = string(&meta, "declarations = \"../fenced.toml\"")?;
                once(&mut self.declarations, &meta, lit)
            }
            "crate" => {
                let lit = string(&meta, "crate = \"fenced_guard\"")?;
                let path: Path = lit.parse()?;
                once(&mut self.krate, &meta, path)
            }
            other => Err(meta.error(format!(
                "unknown option `{other}`; expected one of {OPTIONS}"
            ))),
        }
    }
}

/// The identifier grammar of the guard: ASCII letters, digits and `_`, not starting with a
/// digit, 1 to 128 characters.
pub(crate) fn identifier_problem(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        Some("it is empty")
    } else if name.len() > 128 {
        Some("it is longer than 128 characters")
    } else if name.starts_with(|c: char| c.is_ascii_digit()) {
        Some("it starts with a digit")
    } else if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        Some("only ASCII letters, digits and `_` are allowed")
    } else {
        None
    }
}

/// Checks a table name, `name` or `schema.name`.
pub(crate) fn table_problem(name: &str) -> Option<String> {
    let parts: Vec<&str> = name.split('.').collect();
    if parts.len() > 2 {
        return Some("at most one schema part is allowed (`schema.table`)".to_owned());
    }
    parts
        .iter()
        .find_map(|p| identifier_problem(p).map(|reason| format!("`{p}`: {reason}")))
}

/// The crate the expansion names: `krate = ...`, else `::fenced`.
pub(crate) fn krate(args: &Args) -> Path {
    args.krate
        .clone()
        .unwrap_or_else(|| syn::parse_quote!(::fenced))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_follow_the_guards_grammar() {
        assert_eq!(identifier_problem("Payload_1"), None);
        assert!(identifier_problem("").is_some());
        assert!(identifier_problem("1a").is_some());
        assert!(identifier_problem("a b").is_some());
        assert!(identifier_problem("a\"b").is_some());
        assert!(identifier_problem(&"a".repeat(129)).is_some());
        assert_eq!(table_problem("dbo.ReportPublication"), None);
        assert!(table_problem("a.b.c").is_some());
        assert!(table_problem("dbo.").is_some());
        assert!(table_problem("[dbo].x").is_some());
    }
}
