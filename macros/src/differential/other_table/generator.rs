//! The other-table differential's texts: `INSERT`, `UPDATE` and `DELETE`, upserts and
//! `MERGE`, over the lease's table, its epoch and operations tables, a second fenced
//! table with its own, and plain tables, in every form the three grammars have of
//! naming the table a statement writes: bare, quoted, bracketed and backticked names,
//! `U&"..."`, case and width variants, trailing spaces, schema-qualified and three-part
//! names, names past PostgreSQL's length; aliases, aliases spelled like another table,
//! SQL Server's alias rule (`UPDATE a ... FROM t AS a`), parenthesised joins, table
//! hints, derived tables, common table expressions, statements inside the statement,
//! `FROM`, `USING`, `OUTPUT ... INTO`, `RETURNING`, `TOP`, `ONLY`, `OR REPLACE`, and
//! reads of protected tables inside a write of a plain one.
//!
//! Most texts are written in forms every database runs (a text that fails on one
//! database costs its fenced transaction there); the rest in one database's forms, or
//! in any form, to be refused.

use fenced_guard::Dialect;

use super::super::Rng;
use super::schema::{POSTGRES_NAME_BYTES, Role, names};

/// Whose forms a text is written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Flavour {
    /// Forms every database reads alike, mostly.
    Portable,
    /// One database's forms, mostly.
    Only(Dialect),
}

/// The statement forms, each with the databases that run it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Form {
    Update,
    UpdateFrom,
    /// SQL Server's alias rule: `UPDATE a SET ... FROM t AS a`.
    UpdateAliasRule,
    /// `UPDATE t AS a SET ...`.
    UpdateAs,
    /// `UPDATE a SET ... FROM (t AS a JOIN s ON ...)`.
    UpdateParenthesisedJoin,
    /// `UPDATE a SET ... FROM s WITH (NOLOCK), t AS a`.
    UpdateHinted,
    UpdateDerived,
    UpdateCte,
    UpdateTop,
    UpdateOnly,
    UpdateOr,
    UpdateOutputInto,
    UpdateReturning,
    Delete,
    DeleteWithoutFrom,
    DeleteAliasRule,
    DeleteParenthesisedJoin,
    DeleteUsing,
    DeleteTop,
    DeleteOnly,
    DeleteOutputInto,
    DeleteReturning,
    DeleteCte,
    Insert,
    InsertSelect,
    InsertDefault,
    InsertOnConflict,
    InsertOr,
    Replace,
    InsertAs,
    InsertOutputInto,
    /// `INSERT ... SELECT ... FROM (DELETE ... OUTPUT ...) AS d`.
    InsertFromDml,
    /// `WITH d AS (DELETE ... RETURNING ...) INSERT ...`.
    CteDml,
    InsertExec,
    Merge,
}

const ALL: &[Dialect] = &[Dialect::Postgres, Dialect::Sqlite, Dialect::Mssql];
const POSTGRES: &[Dialect] = &[Dialect::Postgres];
const SQLITE: &[Dialect] = &[Dialect::Sqlite];
const MSSQL: &[Dialect] = &[Dialect::Mssql];
const POSTGRES_SQLITE: &[Dialect] = &[Dialect::Postgres, Dialect::Sqlite];
const POSTGRES_MSSQL: &[Dialect] = &[Dialect::Postgres, Dialect::Mssql];

pub(super) const FORMS: &[Form] = &[
    Form::Update,
    Form::UpdateFrom,
    Form::UpdateAliasRule,
    Form::UpdateAs,
    Form::UpdateParenthesisedJoin,
    Form::UpdateHinted,
    Form::UpdateDerived,
    Form::UpdateCte,
    Form::UpdateTop,
    Form::UpdateOnly,
    Form::UpdateOr,
    Form::UpdateOutputInto,
    Form::UpdateReturning,
    Form::Delete,
    Form::DeleteWithoutFrom,
    Form::DeleteAliasRule,
    Form::DeleteParenthesisedJoin,
    Form::DeleteUsing,
    Form::DeleteTop,
    Form::DeleteOnly,
    Form::DeleteOutputInto,
    Form::DeleteReturning,
    Form::DeleteCte,
    Form::Insert,
    Form::InsertSelect,
    Form::InsertDefault,
    Form::InsertOnConflict,
    Form::InsertOr,
    Form::Replace,
    Form::InsertAs,
    Form::InsertOutputInto,
    Form::InsertFromDml,
    Form::CteDml,
    Form::InsertExec,
    Form::Merge,
];

impl Form {
    /// The databases that run the form.
    fn runs_on(self) -> &'static [Dialect] {
        match self {
            Form::Update
            | Form::UpdateFrom
            | Form::Delete
            | Form::Insert
            | Form::InsertSelect
            | Form::InsertDefault => ALL,
            Form::UpdateAliasRule
            | Form::UpdateParenthesisedJoin
            | Form::UpdateHinted
            | Form::UpdateDerived
            | Form::UpdateCte
            | Form::UpdateTop
            | Form::UpdateOutputInto
            | Form::DeleteWithoutFrom
            | Form::DeleteAliasRule
            | Form::DeleteParenthesisedJoin
            | Form::DeleteTop
            | Form::DeleteOutputInto
            | Form::DeleteCte
            | Form::InsertOutputInto
            | Form::InsertFromDml
            | Form::InsertExec => MSSQL,
            Form::UpdateAs | Form::UpdateReturning | Form::DeleteReturning => POSTGRES_SQLITE,
            Form::InsertOnConflict => POSTGRES_SQLITE,
            Form::UpdateOnly
            | Form::DeleteOnly
            | Form::DeleteUsing
            | Form::InsertAs
            | Form::CteDml => POSTGRES,
            Form::UpdateOr | Form::InsertOr | Form::Replace => SQLITE,
            Form::Merge => POSTGRES_MSSQL,
        }
    }
}

/// The columns a statement on a table of `role` uses.
struct Columns {
    /// A bigint column.
    int: &'static str,
    /// A text column, where the table has one.
    text: Option<&'static str>,
    /// An insert's columns and values.
    insert: &'static str,
}

fn columns(role: Role) -> Columns {
    match role {
        Role::Line | Role::Queue => Columns {
            int: "n",
            text: Some("payload"),
            insert: "(id, payload, n) VALUES (@b, @a, 1)",
        },
        Role::Lease => Columns {
            int: "n",
            text: Some("payload"),
            insert: "(report_id, payload, n) VALUES ('8c6e2a55-3f0b-4c1e-9d7a-0a1b2c3d4e5f', @a, @b)",
        },
        Role::Second => Columns {
            int: "n",
            text: Some("payload"),
            insert: "(invoice_id, payload, n) VALUES ('8c6e2a55-3f0b-4c1e-9d7a-0a1b2c3d4e5f', @a, @b)",
        },
        Role::LeaseEpoch | Role::SecondEpoch => Columns {
            int: "\"Epoch\"",
            text: None,
            insert: "(\"Id\", \"Epoch\") VALUES (1, @b)",
        },
        Role::LeaseOperations | Role::SecondOperations => Columns {
            int: "\"Generation\"",
            text: None,
            insert: "(\"OperationId\", \"Key\", \"Generation\", \"RecordedAt\") VALUES \
                     ('1f0e2d3c-4b5a-4978-8695-a4b3c2d1e0f9', \
                     '8c6e2a55-3f0b-4c1e-9d7a-0a1b2c3d4e5f', @b, CURRENT_TIMESTAMP)",
        },
    }
}

/// A generated text.
pub(super) struct Generated {
    pub(super) text: String,
    /// Whose forms it is written in.
    pub(super) flavour: Flavour,
    /// Its statement's form.
    pub(super) form: Form,
}

/// The seeded generator.
pub(super) struct Generator {
    rng: Rng,
    flavour: Flavour,
}

impl Generator {
    pub(super) fn new(seed: u64) -> Self {
        Generator {
            rng: Rng(seed),
            flavour: Flavour::Portable,
        }
    }

    /// The next text.
    pub(super) fn text(&mut self) -> Generated {
        // One database's own forms now and then: a text in them that the portable
        // check accepts fails on the others, and a failure costs SQL Server (whose
        // transaction it ends) a transaction.
        self.flavour = match self.rng.below(100) {
            0..=83 => Flavour::Portable,
            84..=87 => Flavour::Only(Dialect::Postgres),
            88..=91 => Flavour::Only(Dialect::Sqlite),
            _ => Flavour::Only(Dialect::Mssql),
        };
        let form = self.form();
        let target = self.role(60);
        let mut text = self.statement(form, target);
        if self.rng.chance(10) {
            self.comment(&mut text);
        }
        Generated {
            text,
            flavour: self.flavour,
            form,
        }
    }

    /// A form the flavour's databases run, mostly; any form sometimes.
    fn form(&mut self) -> Form {
        let runs = |form: &Form, flavour| match flavour {
            Flavour::Portable => form.runs_on() == ALL,
            Flavour::Only(d) => form.runs_on().contains(&d),
        };
        if self.rng.chance(5) {
            return FORMS[self.rng.below(FORMS.len())];
        }
        let flavour = self.flavour;
        let fitting: Vec<Form> = FORMS.iter().copied().filter(|f| runs(f, flavour)).collect();
        // The plain forms most of the time, as in an application's SQL.
        let plain = [Form::Update, Form::Delete, Form::Insert];
        if self.rng.chance(50) {
            return plain[self.rng.below(plain.len())];
        }
        fitting[self.rng.below(fitting.len())]
    }

    /// A plain table `plain` percent of the time, else a protected one.
    fn role(&mut self, plain: usize) -> Role {
        if self.rng.chance(plain) {
            Role::PLAIN[self.rng.below(Role::PLAIN.len())]
        } else {
            Role::PROTECTED[self.rng.below(Role::PROTECTED.len())]
        }
    }

    /// A table's name, spelled in one of the flavour's forms (any form sometimes).
    fn spelled(&mut self, role: Role) -> String {
        let name = names().of(role);
        // A plain table is written, mostly, in the forms that reach it on every
        // database: a text that fails somewhere costs a transaction there.
        if !role.is_protected() && self.rng.chance(95) {
            return match self.rng.below(10) {
                0..=5 => name.to_owned(),
                6 => name.to_ascii_uppercase(),
                7 => capitalised(name),
                _ => format!("\"{name}\""),
            };
        }
        let own = match self.flavour {
            Flavour::Only(d) => Some(d),
            Flavour::Portable if self.rng.chance(8) => {
                Some([Dialect::Postgres, Dialect::Sqlite, Dialect::Mssql][self.rng.below(3)])
            }
            Flavour::Portable => None,
        };
        if let Some(d) = own
            && self.rng.chance(35)
        {
            return self.spelled_for(d, name);
        }
        let upper = name.to_ascii_uppercase();
        match self.rng.below(100) {
            0..=44 => name.to_owned(),
            45..=49 => upper,
            50..=53 => capitalised(name),
            54..=66 => format!("\"{name}\""),
            67..=69 => format!("\"{upper}\""),
            70..=74 => format!("dbo.{name}"),
            75..=77 => format!("\"dbo\".\"{name}\""),
            78..=80 => format!("main.{name}"),
            81..=82 => format!("fenced.dbo.{name}"),
            83..=84 => format!("\"{name} \""),
            85 => format!("\" {name}\""),
            86..=87 => format!("\"{}\"", full_width_first(name)),
            88..=89 => format!("dbo /* c */ . {name}"),
            // Truncated by PostgreSQL to the second fenced table's name.
            90..=92 if name.len() >= POSTGRES_NAME_BYTES => format!("{name}yyyy"),
            90..=92 => name.to_owned(),
            _ => format!("\"{}\"", capitalised(name)),
        }
    }

    /// A name in one database's own forms.
    fn spelled_for(&mut self, d: Dialect, name: &str) -> String {
        let upper = name.to_ascii_uppercase();
        match d {
            Dialect::Mssql => match self.rng.below(6) {
                0 => format!("[{name}]"),
                1 => format!("[dbo].[{name}]"),
                2 => format!("[{upper}]"),
                3 => format!("[{name} ]"),
                4 => format!("fenced..{name}"),
                _ => format!("[fenced].[dbo].[{name}]"),
            },
            Dialect::Sqlite => match self.rng.below(6) {
                0 => format!("[{name}]"),
                1 => format!("`{name}`"),
                2 => format!("main.\"{name}\""),
                3 => format!("`main`.`{upper}`"),
                4 => format!("temp.{name}"),
                _ => format!("\"main\".[{name}]"),
            },
            Dialect::Postgres => {
                let (first, rest) = name.split_at(1);
                let code = first.chars().next().map_or(0, u32::from);
                match self.rng.below(6) {
                    0 => format!("U&\"{name}\""),
                    1 => format!("U&\"\\{code:04x}{rest}\""),
                    2 => format!("U&\"!{code:04x}{rest}\" UESCAPE '!'"),
                    3 => format!("\"dbo\".{upper}"),
                    4 => format!("\"{name}yyyyyyyy\""),
                    _ => format!("dbo.\"{name}\""),
                }
            }
        }
    }

    /// An alias: a short one mostly, else spelled like a table, protected or plain.
    fn alias(&mut self) -> String {
        match self.rng.below(10) {
            0..=5 => self.rng.pick(&["a", "t", "x", "w"]).to_owned(),
            6..=8 => {
                let role = Role::PROTECTED[self.rng.below(Role::PROTECTED.len())];
                self.plain_spelling(role)
            }
            _ => {
                let role = Role::PLAIN[self.rng.below(Role::PLAIN.len())];
                self.plain_spelling(role)
            }
        }
    }

    /// A table's name bare or quoted, as an alias can be.
    fn plain_spelling(&mut self, role: Role) -> String {
        let name = names().of(role);
        match self.rng.below(3) {
            0 => name.to_owned(),
            1 => format!("\"{name}\""),
            _ => name.to_ascii_uppercase(),
        }
    }

    /// A source to read: a plain table mostly, a protected one often.
    fn source(&mut self) -> (Role, String) {
        let role = self.role(60);
        (role, self.spelled(role))
    }

    /// `SET ...` for a table of `role`; with `constant`, values that name no column (a
    /// statement with a `FROM` list, where a bare column could be either table's).
    fn assignments(&mut self, role: Role, constant: bool) -> String {
        let c = columns(role);
        let int = c.int;
        let mut out = vec![match self.rng.below(4) {
            0 if !constant => format!("{int} = {int} + 1"),
            1 if !constant => {
                let (_, source) = self.source();
                format!("{int} = (SELECT COUNT(*) FROM {source})")
            }
            _ => format!("{int} = @b"),
        }];
        if let Some(text) = c.text
            && self.rng.chance(40)
        {
            out.push(format!(
                "{text} = {}",
                if self.rng.chance(50) { "@a" } else { "'y'" }
            ));
        }
        out.join(", ")
    }

    /// ` WHERE ...` (or nothing) on a table of `role`, its columns after `qualifier`.
    fn filter(&mut self, role: Role, qualifier: &str) -> String {
        if self.rng.chance(20) {
            return String::new();
        }
        format!(" WHERE {}", self.condition(role, qualifier, 0))
    }

    fn condition(&mut self, role: Role, qualifier: &str, depth: usize) -> String {
        let c = columns(role);
        let int = format!("{qualifier}{}", c.int);
        if depth < 2 && self.rng.chance(20) {
            let left = self.condition(role, qualifier, depth + 1);
            let right = self.condition(role, qualifier, depth + 1);
            return format!(
                "({left}) {} ({right})",
                if self.rng.chance(50) { "OR" } else { "AND" }
            );
        }
        match self.rng.below(9) {
            0 => format!("{int} = @b"),
            1 => format!("{int} > 2"),
            2 => "1 = 1".to_owned(),
            3 => "1 = 0".to_owned(),
            4 => match c.text {
                Some(text) => format!("{qualifier}{text} = @a"),
                None => format!("{int} IS NULL"),
            },
            5 => {
                let (source_role, source) = self.source();
                let theirs = columns(source_role).int;
                format!("{int} IN (SELECT {theirs} FROM {source})")
            }
            6 => {
                let (_, source) = self.source();
                format!("EXISTS (SELECT 1 FROM {source})")
            }
            7 => format!("{int} >= 0"),
            _ => format!("{int} IS NOT NULL"),
        }
    }

    /// ` WHERE ...` on the rows of a `FROM` list's source aliased `s` (its columns
    /// qualified, so no name is ambiguous).
    fn filter_on_source(&mut self, source: Role) -> String {
        let int = columns(source).int;
        match self.rng.below(4) {
            0 => String::new(),
            1 => " WHERE 1 = 1".to_owned(),
            2 => format!(" WHERE s.{int} = @b"),
            _ => format!(" WHERE s.{int} >= 0"),
        }
    }

    fn statement(&mut self, form: Form, target: Role) -> String {
        let table = self.spelled(target);
        let c = columns(target);
        let int = c.int;
        let insert = c.insert;
        match form {
            Form::Update => {
                let set = self.assignments(target, false);
                let filter = self.filter(target, "");
                format!("UPDATE {table} SET {set}{filter}")
            }
            Form::UpdateFrom => {
                let set = self.assignments(target, true);
                let (source_role, source) = self.source();
                let filter = self.filter_on_source(source_role);
                format!("UPDATE {table} SET {set} FROM {source} AS s{filter}")
            }
            Form::UpdateAliasRule => {
                let alias = self.alias();
                let set = self.assignments(target, true);
                if self.rng.chance(50) {
                    let (source_role, source) = self.source();
                    let filter = self.filter_on_source(source_role);
                    format!(
                        "UPDATE {alias} SET {set} FROM {table} AS {alias} JOIN {source} AS s \
                         ON 1 = 1{filter}"
                    )
                } else {
                    let written = if self.rng.chance(50) { " AS" } else { "" };
                    format!("UPDATE {alias} SET {set} FROM {table}{written} {alias}")
                }
            }
            Form::UpdateAs => {
                let alias = self.alias();
                let set = self.assignments(target, false);
                let filter = self.filter(target, &format!("{alias}."));
                format!("UPDATE {table} AS {alias} SET {set}{filter}")
            }
            Form::UpdateParenthesisedJoin => {
                let alias = self.alias();
                let set = self.assignments(target, true);
                let (source_role, source) = self.source();
                let filter = self.filter_on_source(source_role);
                if self.rng.chance(50) {
                    format!(
                        "UPDATE {alias} SET {set} FROM ({table} AS {alias} JOIN {source} AS s \
                         ON 1 = 1){filter}"
                    )
                } else {
                    let (_, other) = self.source();
                    format!(
                        "UPDATE {alias} SET {set} FROM {source} AS s JOIN ({other} AS o \
                         CROSS JOIN {table} AS {alias}) ON 1 = 1{filter}"
                    )
                }
            }
            Form::UpdateHinted => {
                let alias = self.alias();
                let set = self.assignments(target, true);
                let (source_role, source) = self.source();
                let filter = self.filter_on_source(source_role);
                if self.rng.chance(50) {
                    format!(
                        "UPDATE {alias} SET {set} FROM {source} AS s WITH (NOLOCK), \
                         {table} AS {alias}{filter}"
                    )
                } else {
                    let filter = self.filter(target, "");
                    let set = self.assignments(target, false);
                    format!("UPDATE {table} WITH (ROWLOCK) SET {set}{filter}")
                }
            }
            Form::UpdateDerived => {
                let alias = self.alias();
                let set = self.assignments(target, true);
                format!("UPDATE {alias} SET {set} FROM (SELECT * FROM {table}) AS {alias}")
            }
            Form::UpdateCte => {
                let alias = self.alias();
                let set = self.assignments(target, false);
                format!("WITH {alias} AS (SELECT * FROM {table}) UPDATE {alias} SET {set}")
            }
            Form::UpdateTop => {
                let set = self.assignments(target, false);
                let filter = self.filter(target, "");
                format!("UPDATE TOP (1) {table} SET {set}{filter}")
            }
            Form::UpdateOnly => {
                let set = self.assignments(target, false);
                let filter = self.filter(target, "");
                format!("UPDATE ONLY {table} SET {set}{filter}")
            }
            Form::UpdateOr => {
                let set = self.assignments(target, false);
                let filter = self.filter(target, "");
                let or = self.rng.pick(&["IGNORE", "REPLACE"]);
                format!("UPDATE OR {or} {table} SET {set}{filter}")
            }
            Form::UpdateOutputInto => {
                let set = self.assignments(target, false);
                let (into_role, into) = self.source();
                let theirs = columns(into_role).int;
                let filter = self.filter(target, "");
                format!(
                    "UPDATE {table} SET {set} OUTPUT inserted.{int} INTO {into} ({theirs}){filter}"
                )
            }
            Form::UpdateReturning => {
                let set = self.assignments(target, false);
                let filter = self.filter(target, "");
                format!("UPDATE {table} SET {set}{filter} RETURNING {int}")
            }
            Form::Delete => {
                let filter = self.filter(target, "");
                format!("DELETE FROM {table}{filter}")
            }
            Form::DeleteWithoutFrom => {
                let filter = self.filter(target, "");
                format!("DELETE {table}{filter}")
            }
            Form::DeleteAliasRule => {
                let alias = self.alias();
                if self.rng.chance(50) {
                    let (source_role, source) = self.source();
                    let filter = self.filter_on_source(source_role);
                    format!(
                        "DELETE {alias} FROM {table} AS {alias} JOIN {source} AS s ON 1 = 1{filter}"
                    )
                } else {
                    format!("DELETE FROM {alias} FROM {table} {alias}")
                }
            }
            Form::DeleteParenthesisedJoin => {
                let alias = self.alias();
                let (source_role, source) = self.source();
                let filter = self.filter_on_source(source_role);
                format!(
                    "DELETE {alias} FROM ({table} AS {alias} JOIN {source} AS s ON 1 = 1){filter}"
                )
            }
            Form::DeleteUsing => {
                let (source_role, source) = self.source();
                let filter = self.filter_on_source(source_role);
                if self.rng.chance(50) {
                    let alias = self.alias();
                    format!("DELETE FROM {table} AS {alias} USING {source} AS s{filter}")
                } else {
                    format!("DELETE FROM {table} USING {source} AS s{filter}")
                }
            }
            Form::DeleteTop => {
                let filter = self.filter(target, "");
                format!("DELETE TOP (1) FROM {table}{filter}")
            }
            Form::DeleteOnly => {
                let filter = self.filter(target, "");
                format!("DELETE FROM ONLY {table}{filter}")
            }
            Form::DeleteOutputInto => {
                let (into_role, into) = self.source();
                let theirs = columns(into_role).int;
                let filter = self.filter(target, "");
                format!("DELETE FROM {table} OUTPUT deleted.{int} INTO {into} ({theirs}){filter}")
            }
            Form::DeleteReturning => {
                let filter = self.filter(target, "");
                format!("DELETE FROM {table}{filter} RETURNING {int}")
            }
            Form::DeleteCte => {
                let alias = self.alias();
                format!("WITH {alias} AS (SELECT * FROM {table}) DELETE FROM {alias}")
            }
            Form::Insert => format!("INSERT INTO {table} {insert}"),
            Form::InsertSelect => {
                let (source_role, source) = self.source();
                let theirs = columns(source_role).int;
                let value = if self.rng.chance(50) {
                    "COUNT(*)".to_owned()
                } else {
                    format!("MAX({theirs})")
                };
                format!("INSERT INTO {table} ({int}) SELECT {value} FROM {source}")
            }
            Form::InsertDefault => format!("INSERT INTO {table} DEFAULT VALUES"),
            Form::InsertOnConflict => {
                // `DO UPDATE` needs a unique key to name, which only the fenced tables
                // have: on the others it fails.
                if !target.is_protected() || self.rng.chance(50) {
                    format!("INSERT INTO {table} {insert} ON CONFLICT DO NOTHING")
                } else {
                    let key = match target {
                        Role::Lease => "report_id",
                        Role::Second => "invoice_id",
                        Role::LeaseEpoch | Role::SecondEpoch => "\"Id\"",
                        _ => "\"OperationId\"",
                    };
                    format!(
                        "INSERT INTO {table} {insert} ON CONFLICT ({key}) DO UPDATE SET \
                         {int} = excluded.{int}"
                    )
                }
            }
            Form::InsertOr => {
                let or = self.rng.pick(&["IGNORE", "REPLACE"]);
                format!("INSERT OR {or} INTO {table} {insert}")
            }
            Form::Replace => format!("REPLACE INTO {table} {insert}"),
            Form::InsertAs => {
                let alias = self.alias();
                format!("INSERT INTO {table} AS {alias} {insert}")
            }
            Form::InsertOutputInto => {
                let (into_role, into) = self.source();
                let theirs = columns(into_role).int;
                let (names, values) = insert.split_once(" VALUES ").unwrap_or((insert, ""));
                format!(
                    "INSERT INTO {table} {names} OUTPUT inserted.{int} INTO {into} ({theirs}) \
                     VALUES {values}"
                )
            }
            Form::InsertFromDml => {
                let (from_role, from) = self.source();
                let theirs = columns(from_role).int;
                let dml = if self.rng.chance(50) {
                    format!("DELETE FROM {from} OUTPUT deleted.{theirs} AS v")
                } else {
                    format!("UPDATE {from} SET {theirs} = @b OUTPUT inserted.{theirs} AS v")
                };
                format!("INSERT INTO {table} ({int}) SELECT d.v FROM ({dml}) AS d")
            }
            Form::CteDml => {
                let (from_role, from) = self.source();
                let theirs = columns(from_role).int;
                let dml = if self.rng.chance(50) {
                    format!("DELETE FROM {from} WHERE 1 = 0 RETURNING {theirs} AS v")
                } else {
                    format!("UPDATE {from} SET {theirs} = {theirs} RETURNING {theirs} AS v")
                };
                format!("WITH d AS ({dml}) INSERT INTO {table} ({int}) SELECT v FROM d")
            }
            Form::InsertExec => {
                format!("INSERT INTO {table} ({int}) EXEC sp_executesql 'SELECT 1'")
            }
            Form::Merge => {
                let (source_role, source) = self.source();
                let theirs = columns(source_role).int;
                let alias = self.alias();
                format!(
                    "MERGE INTO {table} AS {alias} USING {source} AS s ON {alias}.{int} = s.{theirs} \
                     WHEN MATCHED THEN UPDATE SET {int} = s.{theirs} \
                     WHEN NOT MATCHED THEN INSERT ({int}) VALUES (s.{theirs})"
                )
            }
        }
    }

    /// A comment or a line break in place of one of the text's spaces.
    fn comment(&mut self, text: &mut String) {
        let spaces: Vec<usize> = text.match_indices(' ').map(|(i, _)| i).collect();
        if spaces.is_empty() {
            return;
        }
        let at = spaces[self.rng.below(spaces.len())];
        let with = self.rng.pick(&[" /* c */ ", "\n", " -- c\n", "\t"]);
        text.replace_range(at..at + 1, with);
    }
}

/// `name` with its first letter upper case.
fn capitalised(name: &str) -> String {
    let mut chars = name.chars();
    chars.next().map_or_else(String::new, |first| {
        first.to_ascii_uppercase().to_string() + chars.as_str()
    })
}

/// `name` with its first letter in its full-width form (which SQL Server's default
/// collations take for the ASCII letter).
fn full_width_first(name: &str) -> String {
    let mut chars = name.chars();
    chars.next().map_or_else(String::new, |first| {
        char::from_u32(u32::from(first) + 0xFEE0)
            .unwrap_or(first)
            .to_string()
            + chars.as_str()
    })
}
