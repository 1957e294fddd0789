//! The application's declaration of its fenced tables (`fenced.toml`), read at compile
//! time: the column names of `#[fenced_write]`'s table, the tables no other-table write
//! may touch, and `table!`'s table.
//!
//! The file is the nearest `fenced.toml` (or `fenced-lint.toml`) in the crate's manifest
//! directory or a parent of it, or the one `declarations = "..."` names, relative to the
//! manifest directory. The expansion includes the file's bytes, so that cargo compiles
//! the crate again when the file changes.

use std::path::{Path, PathBuf};

use fenced_guard::{Declarations, FencedTable, QualifiedName};
use fenced_lint::TableSpec;
use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::LitStr;

use crate::args::{Args, Name};

/// A declaration file, read.
pub(crate) struct Found {
    pub(crate) path: PathBuf,
    pub(crate) declarations: Declarations,
}

impl Found {
    /// `const _: &[u8] = include_bytes!("<file>");`: makes the crate depend on the file.
    pub(crate) fn tracking(&self) -> TokenStream {
        let path = self.path.to_string_lossy().into_owned();
        quote! { const _: &[u8] = ::core::include_bytes!(#path); }
    }
}

/// The declarations the crate being compiled sees: those of `explicit` (relative to its
/// manifest directory), else the nearest file found upwards, else none.
pub(crate) fn load(explicit: Option<&LitStr>) -> syn::Result<Option<Found>> {
    let span = explicit.map_or_else(Span::call_site, LitStr::span);
    let Some(manifest_dir) = std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from) else {
        return match explicit {
            Some(lit) => Err(syn::Error::new(
                lit.span(),
                "`declarations` is relative to the crate's directory, and cargo did not say \
                 which it is (CARGO_MANIFEST_DIR is unset)",
            )),
            None => Ok(None),
        };
    };
    let path = match explicit {
        Some(lit) => {
            let path = manifest_dir.join(lit.value());
            if !path.is_file() {
                return Err(syn::Error::new(
                    span,
                    format!("no declaration file at `{}`", path.display()),
                ));
            }
            path
        }
        None => match fenced_lint::Config::find(&manifest_dir) {
            Some(path) => path,
            None => return Ok(None),
        },
    };
    let path = path.canonicalize().unwrap_or(path);
    let declarations = Declarations::load(&path)
        .map_err(|e| syn::Error::new(span, format!("in `{}`: {e}", path.display())))?;
    Ok(Some(Found { path, declarations }))
}

/// Takes the column names of `args`' table from its declaration, where it has one: a
/// column the attribute leaves out is the declared one, and a column it names
/// differently is an error, so that the file stays the one place that names them.
pub(crate) fn apply(args: &mut Args, found: &Found) -> Vec<syn::Error> {
    let Some(table) = args.table.clone() else {
        return Vec::new();
    };
    let Some(spec) = found.declarations.spec(&table.value()).cloned() else {
        return Vec::new();
    };
    let file = file_name(&found.path);
    let mut errors = Vec::new();
    let Some(epoch) = spec.epoch.clone() else {
        errors.push(syn::Error::new(
            table.span(),
            format!(
                "`{file}` declares table `{}` with `epoch = false`, but the guard checks an \
                 epoch column in every statement: name the table's epoch column there",
                spec.display_name()
            ),
        ));
        return errors;
    };
    let roles: [(&str, &mut Name, &str); 6] = [
        ("key", &mut args.key, &spec.key),
        ("generation", &mut args.generation, &spec.generation),
        ("owner", &mut args.owner, &spec.owner),
        ("expiry", &mut args.expiry, &spec.expiry),
        ("published", &mut args.published, &spec.published),
        ("epoch", &mut args.epoch, &epoch),
    ];
    for (role, name, declared) in roles {
        match &name.literal {
            Some(literal) if literal.value() != declared => errors.push(syn::Error::new(
                literal.span(),
                format!(
                    "`{role} = \"{}\"` contradicts `{file}`, which declares `{}`'s {role} column \
                     as `{declared}`\nhelp: remove `{role}` here: the declaration names it \
                     for every method",
                    literal.value(),
                    spec.display_name(),
                ),
            )),
            _ => name.value = declared.to_owned(),
        }
    }
    errors
}

/// The protected table, other than `lease_table`, that a statement writing `target`
/// would write: a declared fenced table (whose rows only its own leases may write), or
/// a declared table's epoch or operations table (which only the guard writes). Without
/// a declaration of `lease_table`, its epoch and operations tables are the guard's
/// defaults. `None` when `target` is none of them.
pub(crate) fn protected(found: Option<&Found>, lease_table: &str, target: &str) -> Option<String> {
    let (schema, name) = split(target);
    let lease = found.and_then(|f| f.declarations.spec(lease_table));
    let undeclared_lease = lease
        .is_none()
        .then(|| TableSpec::new(lease_table, fenced_lint::config::DEFAULT_KEY));
    let declared = found.map_or(&[][..], |f| &f.declarations.config().tables[..]);
    if let Some(other) = declared
        .iter()
        .find(|spec| spec.matches(schema, name) && lease != Some(*spec))
    {
        return Some(format!(
            "`{}`, a fenced table declared in `{}`: only a lease of its own may write it",
            other.display_name(),
            found.map_or_else(String::new, |f| file_name(&f.path))
        ));
    }
    for spec in declared.iter().chain(&undeclared_lease) {
        if spec.matches_epoch_table(schema, name) {
            return Some(format!(
                "`{}`, the epoch table of `{}`: only the guard writes it (`Store::advance_epoch`)",
                spec.epoch_table_display_name(),
                spec.display_name()
            ));
        }
        if spec.matches_operations_table(schema, name) {
            return Some(format!(
                "`{}`, the operations table of `{}`: only the guard writes it, recording an \
                 operation id's outcome",
                spec.operations_table_display_name(),
                spec.display_name()
            ));
        }
    }
    None
}

/// The tables a statement of another table's fenced transaction may not write, as the
/// guard names them: the lease's table with its epoch and operations tables, and every
/// declared table with its own.
pub(crate) fn protected_names(found: Option<&Found>, lease_table: &str) -> Vec<QualifiedName> {
    let mut names = Vec::new();
    let mut add = |table: &FencedTable| {
        for name in [table.name(), table.epoch_table(), table.operations_table()] {
            if !names.contains(name) {
                names.push(name.clone());
            }
        }
    };
    let lease = found
        .and_then(|f| f.declarations.table(lease_table).ok())
        .or_else(|| FencedTable::builder().table(lease_table).build().ok());
    if let Some(lease) = &lease {
        add(lease);
    }
    if let Some(found) = found {
        for spec in &found.declarations.config().tables {
            if let Ok(table) = fenced_guard::declaration::builder(spec).and_then(|b| b.build()) {
                add(&table);
            }
        }
    }
    names
}

fn split(name: &str) -> (Option<&str>, &str) {
    match name.rsplit_once('.') {
        Some((schema, name)) => (Some(schema), name),
        None => (None, name),
    }
}

fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(text: &str) -> Found {
        Found {
            path: PathBuf::from("/app/fenced.toml"),
            declarations: Declarations::from_toml(text).unwrap(),
        }
    }

    const TWO: &str = "[[table]]\nname = \"Report\"\nkey = \"ReportId\"\noperations_table = \"ReportOps\"\n\
                       [[table]]\nname = \"audit.Invoice\"\nkey = \"InvoiceId\"\nepoch_table = \"audit.Epochs\"\n";

    #[test]
    fn the_declared_tables_are_protected_on_the_other_table_path() {
        let two = found(TWO);
        let refused = |target: &str| protected(Some(&two), "Report", target);
        for target in [
            "Invoice",
            "audit.invoice",
            "FencedEpoch",
            "ReportOps",
            "dbo.reportops",
            "audit.Epochs",
            "FencedOperation",
        ] {
            assert!(refused(target).is_some(), "{target}");
        }
        assert!(
            refused("Invoice")
                .unwrap()
                .contains("a fenced table declared in `fenced.toml`")
        );
        assert!(
            refused("ReportOps")
                .unwrap()
                .contains("the operations table of `Report`")
        );
        // The controls: a plain table, and a table of the same name in another schema
        // than the declared one.
        assert_eq!(refused("ReportLine"), None);
        assert_eq!(refused("public.Invoice"), None);
    }

    #[test]
    fn without_a_declaration_the_guards_default_protocol_tables_are_protected() {
        for found in [None, Some(found(TWO))] {
            let refused = |target: &str| protected(found.as_ref(), "Jobs", target);
            assert!(
                refused("FencedEpoch")
                    .unwrap()
                    .contains("the epoch table of")
            );
            assert!(refused("fencedoperation").is_some());
            assert_eq!(refused("JobLine"), None);
        }
    }

    #[test]
    fn columns_come_from_the_declaration_and_may_not_contradict_it() {
        let declared = found(
            "[[table]]\nname = \"jobs\"\nkey = \"job_id\"\nowner = \"lease_owner\"\nepoch = \"lease_epoch\"\n",
        );
        let mut args = Args {
            table: Some(syn::parse_quote!("jobs")),
            ..Args::default()
        };
        assert!(apply(&mut args, &declared).is_empty());
        assert_eq!(args.key.value, "job_id");
        assert_eq!(args.owner.value, "lease_owner");
        assert_eq!(args.epoch.value, "lease_epoch");
        assert_eq!(args.generation.value, "Generation");
        let mut contradicting = Args {
            table: Some(syn::parse_quote!("jobs")),
            ..Args::default()
        };
        contradicting.owner.literal = Some(syn::parse_quote!("holder"));
        contradicting.owner.value = "holder".to_owned();
        let errors = apply(&mut contradicting, &declared);
        assert_eq!(errors.len(), 1);
        assert!(errors[0].to_string().contains("contradicts `fenced.toml`"));
        // The control: a table the file does not declare keeps the attribute's names.
        let mut undeclared = Args {
            table: Some(syn::parse_quote!("other")),
            ..Args::default()
        };
        undeclared.owner.literal = Some(syn::parse_quote!("holder"));
        undeclared.owner.value = "holder".to_owned();
        assert!(apply(&mut undeclared, &declared).is_empty());
        assert_eq!(undeclared.owner.value, "holder");
        let epochless = found("[[table]]\nname = \"old\"\nepoch = false\n");
        let mut old = Args {
            table: Some(syn::parse_quote!("old")),
            ..Args::default()
        };
        assert!(
            apply(&mut old, &epochless)[0]
                .to_string()
                .contains("epoch = false")
        );
    }
}
