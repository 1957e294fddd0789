//! SQL Server deployments that enforce the protocol by permission: stored procedures
//! for every protocol write, and a role that may execute them but not write the tables.
//!
//! [`MssqlProcedures`] renders, for one [`FencedTable`]:
//!
//! - one procedure per operation ([`Procedure`]), each holding the very statement the
//!   guard sends in its ordinary mode (same fence, same clock, same epoch check), with
//!   named parameters instead of `@Pn`. Each is installed by two batches: a stub created
//!   if the procedure is absent, then `ALTER PROCEDURE`, so that a reinstall keeps the
//!   permissions granted on it (the form every SQL Server accepts; `CREATE OR ALTER`
//!   needs SQL Server 2016 SP1 and is not understood by every TDS server);
//! - a permission script: an application role with `GRANT EXECUTE` on those procedures,
//!   `GRANT SELECT` on the three tables, and `DENY UPDATE, INSERT, DELETE` on them.
//!
//! The procedures and the tables must have the same owner (for example both in `dbo`):
//! ownership chaining then lets a procedure write a table the caller may not write. The
//! procedures use no dynamic SQL, which would break the chain.
//!
//! [`Store::through_procedures`](crate::Store::through_procedures) makes a store call
//! the procedures instead of sending statements. Write the scripts to files with the
//! `mssql_procedures` example: `cargo run -p fenced-guard --example mssql_procedures --
//! OUT_DIR`.
//!
//! Every procedure ends with one result row: acquisition returns the new generation and
//! epoch (no row when refused), provision, renewal, release and publications return
//! `RowsAffected`, and the epoch advance returns the new epoch.

use crate::dialect::{self, Dialect};
use crate::error::Result;
use crate::mssql::dialect as mssql;
use crate::table::{FencedTable, Identifier, QualifiedName};

const D: Dialect = Dialect::Mssql;

/// The operations that have a procedure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Procedure {
    /// Inserts the row with generation 0 if absent: `@Key`.
    Provision,
    /// Acquires the row: `@Key`, `@Owner`, `@TtlMs`; returns `Generation`, epoch.
    Acquire,
    /// Renews: `@Key`, `@Generation`, `@Owner`, `@TtlMs`.
    Renew,
    /// Publishes every declared application column (`@p_<column>`), then `@Key`,
    /// `@Generation`, `@Owner`, and an optional `@OperationId` recorded with it.
    Publish,
    /// [`Publish`](Procedure::Publish) and release in one statement.
    PublishAndRelease,
    /// Releases: `@Key`, `@Generation`, `@Owner`.
    Release,
    /// Advances the recovery epoch: `@Floor`; returns the new epoch.
    AdvanceEpoch,
}

impl Procedure {
    /// Every procedure, in script order.
    pub const ALL: [Procedure; 7] = [
        Procedure::Provision,
        Procedure::Acquire,
        Procedure::Renew,
        Procedure::Publish,
        Procedure::PublishAndRelease,
        Procedure::Release,
        Procedure::AdvanceEpoch,
    ];

    fn suffix(self) -> &'static str {
        match self {
            Procedure::Provision => "Provision",
            Procedure::Acquire => "Acquire",
            Procedure::Renew => "Renew",
            Procedure::Publish => "Publish",
            Procedure::PublishAndRelease => "PublishAndRelease",
            Procedure::Release => "Release",
            Procedure::AdvanceEpoch => "AdvanceEpoch",
        }
    }
}

/// The procedures and the permission script for one fenced table on SQL Server.
///
/// Procedure names are the table's name and the operation, in the table's schema:
/// `[dbo].[ReportPublication_Acquire]`.
#[derive(Clone, Debug)]
pub struct MssqlProcedures {
    table: FencedTable,
    names: Vec<(Procedure, QualifiedName)>,
    role: Identifier,
}

impl MssqlProcedures {
    /// The procedures for `table`, with the application role `FencedApplication`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidIdentifier`](crate::Error::InvalidIdentifier) when a procedure name (the table's name, `_` and the
    /// operation) would be longer than 128 characters.
    pub fn new(table: &FencedTable) -> Result<Self> {
        let names = Procedure::ALL
            .iter()
            .map(|&p| {
                let name = Identifier::new(&format!("{}_{}", table.name().name(), p.suffix()))?;
                let qualified = match table.name().schema() {
                    Some(schema) => format!("{schema}.{name}"),
                    None => name.to_string(),
                };
                Ok((p, QualifiedName::parse(&qualified)?))
            })
            .collect::<Result<_>>()?;
        Ok(MssqlProcedures {
            table: table.clone(),
            names,
            role: Identifier::new("FencedApplication").expect("valid identifier"),
        })
    }

    /// Uses `role` as the application role's name instead of `FencedApplication`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidIdentifier`](crate::Error::InvalidIdentifier) for a name outside the identifier grammar.
    pub fn with_role(mut self, role: &str) -> Result<Self> {
        self.role = Identifier::new(role)?;
        Ok(self)
    }

    /// The fenced table.
    pub fn table(&self) -> &FencedTable {
        &self.table
    }

    /// The application role.
    pub fn role(&self) -> &Identifier {
        &self.role
    }

    /// The name of procedure `p`.
    pub fn name(&self, p: Procedure) -> &QualifiedName {
        &self
            .names
            .iter()
            .find(|(q, _)| *q == p)
            .expect("every procedure is named")
            .1
    }

    /// Two batches per procedure, in [`Procedure::ALL`] order: [`stub`] then
    /// [`procedure`], each to be run on its own (for example with
    /// [`Executor::execute_batch`](crate::Executor::execute_batch)). Running them again
    /// replaces the procedures' bodies and keeps their permissions.
    ///
    /// [`stub`]: MssqlProcedures::stub
    /// [`procedure`]: MssqlProcedures::procedure
    pub fn procedure_batches(&self) -> Vec<String> {
        Procedure::ALL
            .iter()
            .flat_map(|&p| [self.stub(p), self.procedure(p)])
            .collect()
    }

    /// Creates procedure `p` as an empty stub if it does not exist, so that
    /// [`procedure`](MssqlProcedures::procedure) can `ALTER` it.
    pub fn stub(&self, p: Procedure) -> String {
        let name = self.name(p).quoted(D);
        // The name inside the literals is made of validated identifiers: no quotes.
        format!(
            "IF OBJECT_ID(N'{name}', N'P') IS NULL EXEC(N'CREATE PROCEDURE {name} AS RETURN 0')"
        )
    }

    /// The procedures as one script, batches separated by `GO` lines (for `sqlcmd` and
    /// SSMS).
    pub fn procedures_script(&self) -> String {
        script(&self.procedure_batches())
    }

    /// The permission batches: the role (created if absent), `GRANT EXECUTE` on every
    /// procedure, `GRANT SELECT` and `DENY UPDATE, INSERT, DELETE` on the fenced table,
    /// the outcomes table and the epoch table.
    pub fn permission_batches(&self) -> Vec<String> {
        let role = self.role.quoted(D);
        // The role name inside the literal is a validated identifier: no quotes possible.
        let mut batches = vec![format!(
            "IF DATABASE_PRINCIPAL_ID(N'{}') IS NULL CREATE ROLE {role}",
            self.role
        )];
        for (_, name) in &self.names {
            batches.push(format!(
                "GRANT EXECUTE ON OBJECT::{} TO {role}",
                name.quoted(D)
            ));
        }
        for table in [
            self.table.name(),
            self.table.operations_table(),
            self.table.epoch_table(),
        ] {
            let table = table.quoted(D);
            batches.push(format!("GRANT SELECT ON OBJECT::{table} TO {role}"));
            batches.push(format!(
                "DENY UPDATE, INSERT, DELETE ON OBJECT::{table} TO {role}"
            ));
        }
        batches
    }

    /// The permission batches as one script, separated by `GO` lines.
    pub fn permissions_script(&self) -> String {
        script(&self.permission_batches())
    }

    /// `ALTER PROCEDURE` giving procedure `p` its body; the procedure must exist (see
    /// [`stub`](MssqlProcedures::stub)).
    pub fn procedure(&self, p: Procedure) -> String {
        let t = &self.table;
        let key_type = D.key_sql_type(t.key_type());
        let columns: Vec<&Identifier> = t.columns().iter().map(|c| c.name()).collect();
        let n = columns.len();
        let caller_params: Vec<String> = t
            .columns()
            .iter()
            .map(|c| format!("@p_{} {}", c.name(), mssql::column_type(c.column_type())))
            .collect();
        let lease = |first: usize| {
            vec![
                (first, "@Key".to_owned()),
                (first + 1, "@Generation".to_owned()),
                (first + 2, "@Owner".to_owned()),
            ]
        };
        let lease_decl = format!("@Key {key_type}, @Generation bigint, @Owner uniqueidentifier");
        let rows = "SELECT @@ROWCOUNT AS [RowsAffected];";
        let (params, body) = match p {
            Procedure::Provision => (
                format!("@Key {key_type}"),
                format!(
                    "{};\n    {rows}",
                    named(&dialect::provision(D, t), &[(1, "@Key".into())])
                ),
            ),
            Procedure::Acquire => (
                format!("@Key {key_type}, @Owner uniqueidentifier, @TtlMs int"),
                format!(
                    "{};",
                    named(
                        &dialect::acquire(D, t),
                        &[
                            (1, "@Key".into()),
                            (2, "@Owner".into()),
                            (3, "@TtlMs".into())
                        ]
                    )
                ),
            ),
            Procedure::Renew => {
                let mut names = lease(1);
                names.push((4, "@TtlMs".into()));
                (
                    format!("{lease_decl}, @TtlMs int"),
                    format!("{};\n    {rows}", named(&dialect::renew(D, t), &names)),
                )
            }
            Procedure::Release => (
                lease_decl,
                format!("{};\n    {rows}", named(&dialect::release(D, t), &lease(1))),
            ),
            Procedure::Publish | Procedure::PublishAndRelease => {
                let release = p == Procedure::PublishAndRelease;
                let mut names: Vec<(usize, String)> = columns
                    .iter()
                    .enumerate()
                    .map(|(i, c)| (i + 1, format!("@p_{c}")))
                    .collect();
                names.extend(lease(n + 1));
                names.push((n + 4, "@OperationId".into()));
                let mut declared = caller_params.clone();
                declared.push(lease_decl);
                declared.push("@OperationId uniqueidentifier = NULL".into());
                let plain = named(&dialect::publish(D, t, &columns, release), &names);
                let recorded = named(&dialect::publish_recorded(D, t, &columns, release), &names);
                (
                    declared.join(", "),
                    format!(
                        // The recorded write ends with its own count.
                        "IF @OperationId IS NULL\n    BEGIN\n        {plain};\n        {rows}\n    \
                         END\n    ELSE\n    BEGIN\n        {recorded};\n    END"
                    ),
                )
            }
            Procedure::AdvanceEpoch => (
                "@Floor bigint".to_owned(),
                format!(
                    "{};",
                    named(&dialect::advance_epoch(D, t), &[(1, "@Floor".into())])
                ),
            ),
        };
        format!(
            "ALTER PROCEDURE {} {params}\nAS\nBEGIN\n    SET NOCOUNT ON;\n    {body}\nEND",
            self.name(p).quoted(D)
        )
    }

    /// How the guard calls procedure `p`: `EXEC name @Param = @P1, ...`, with the
    /// guard's usual parameter order (see [`dialect`](crate::dialect)). For the
    /// publications, `recorded` adds `@OperationId` as the last parameter.
    pub(crate) fn call(&self, p: Procedure, recorded: bool) -> String {
        let mut names: Vec<String> = match p {
            Procedure::Provision => vec!["@Key".into()],
            Procedure::Acquire => vec!["@Key".into(), "@Owner".into(), "@TtlMs".into()],
            Procedure::Renew => vec![
                "@Key".into(),
                "@Generation".into(),
                "@Owner".into(),
                "@TtlMs".into(),
            ],
            Procedure::Release => vec!["@Key".into(), "@Generation".into(), "@Owner".into()],
            Procedure::Publish | Procedure::PublishAndRelease => {
                let mut names: Vec<String> = self
                    .table
                    .columns()
                    .iter()
                    .map(|c| format!("@p_{}", c.name()))
                    .collect();
                names.extend(["@Key".into(), "@Generation".into(), "@Owner".into()]);
                if recorded {
                    names.push("@OperationId".into());
                }
                names
            }
            Procedure::AdvanceEpoch => vec!["@Floor".into()],
        };
        let args: Vec<String> = names
            .drain(..)
            .enumerate()
            .map(|(i, name)| format!("{name} = {}", D.placeholder(i + 1)))
            .collect();
        format!("EXEC {} {}", self.name(p).quoted(D), args.join(", "))
    }
}

/// Replaces the numbered placeholders `@Pn` by names, highest number first so that
/// `@P1` never matches the start of `@P10`.
fn named(sql: &str, names: &[(usize, String)]) -> String {
    let mut sorted: Vec<&(usize, String)> = names.iter().collect();
    sorted.sort_by_key(|entry| std::cmp::Reverse(entry.0));
    let mut out = sql.to_owned();
    for (n, name) in sorted {
        out = out.replace(&D.placeholder(*n), name);
    }
    out
}

fn script(batches: &[String]) -> String {
    let mut out = String::new();
    for batch in batches {
        out.push_str(batch);
        out.push_str("\nGO\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::table::{ColumnType, KeyType};

    fn table() -> FencedTable {
        FencedTable::builder()
            .table("dbo.ReportPublication")
            .published_at_column("PublishedAtUtc")
            .column("Payload", ColumnType::Text)
            .column("Pages", ColumnType::BigInt)
            .build()
            .unwrap()
    }

    fn procedures() -> MssqlProcedures {
        MssqlProcedures::new(&table()).unwrap()
    }

    /// The repository's own lint, configured with the fenced table.
    fn lint(script: &str) -> Vec<String> {
        let config = fenced_lint::Config::from_toml(
            "[[table]]\nname = \"dbo.ReportPublication\"\nkey = \"ReportId\"\n",
        )
        .unwrap();
        let report = fenced_lint::Linter::new(&config)
            .check_file(Path::new("fenced_procedures.sql"), script.as_bytes());
        assert!(report.statements_checked > 0, "the lint saw no statement");
        report
            .diagnostics
            .iter()
            .map(|d| format!("{}: {}", d.rule.name(), d.message))
            .collect()
    }

    #[test]
    fn the_lint_finds_nothing_wrong_in_the_generated_scripts() {
        let p = procedures();
        let script = format!("{}{}", p.procedures_script(), p.permissions_script());
        assert_eq!(lint(&script), Vec::<String>::new());
        assert!(
            lint(&p.procedures_script()).is_empty() && lint(&p.permissions_script()).is_empty()
        );
    }

    #[test]
    fn negative_control_the_lint_flags_a_hand_broken_procedure() {
        let p = procedures();
        let publish = p.procedure(Procedure::Publish);
        let fence = dialect::fence_predicate(D, &table(), 1);
        let fence = named(
            &fence,
            &[
                (1, "@Key".into()),
                (2, "@Generation".into()),
                (3, "@Owner".into()),
            ],
        );
        assert!(publish.contains(&fence), "{publish}");
        // Keep the key, drop generation, owner, expiry and epoch: an unfenced write.
        let broken = publish.replace(&fence, "[ReportId] = @Key");
        let findings = lint(&broken);
        assert!(
            findings.iter().any(|f| f.starts_with("unfenced-write")),
            "{findings:?}"
        );
        // And a grant of UPDATE on the fenced table, instead of the DENY.
        let grant = p.permissions_script().replace(
            "DENY UPDATE, INSERT, DELETE ON OBJECT::[dbo].[ReportPublication]",
            // fenced-lint: allow(fenced-table-grant) the negative control: this grant must be flagged
            "GRANT UPDATE ON OBJECT::[dbo].[ReportPublication]",
        );
        let findings = lint(&grant);
        assert!(
            findings.iter().any(|f| f.starts_with("fenced-table-grant")),
            "{findings:?}"
        );
    }

    #[test]
    fn procedures_carry_the_guards_own_statements() {
        let p = procedures();
        let t = table();
        let renew = p.procedure(Procedure::Renew);
        assert_eq!(
            renew,
            format!(
                "ALTER PROCEDURE [dbo].[ReportPublication_Renew] @Key uniqueidentifier, \
                 @Generation bigint, @Owner uniqueidentifier, @TtlMs int\nAS\nBEGIN\n    SET NOCOUNT ON;\n    \
                 {};\n    SELECT @@ROWCOUNT AS [RowsAffected];\nEND",
                dialect::renew(D, &t)
                    .replace("@P1", "@Key")
                    .replace("@P2", "@Generation")
                    .replace("@P3", "@Owner")
                    .replace("@P4", "@TtlMs")
            )
        );
        let publish = p.procedure(Procedure::PublishAndRelease);
        assert!(publish.starts_with(
            "ALTER PROCEDURE [dbo].[ReportPublication_PublishAndRelease] \
             @p_Payload nvarchar(max), @p_Pages bigint, @Key uniqueidentifier, @Generation bigint, \
             @Owner uniqueidentifier, @OperationId uniqueidentifier = NULL\nAS\n"
        ));
        assert!(publish.contains(
            "[Payload] = @p_Payload, [Pages] = @p_Pages, [PublishedGeneration] = @Generation"
        ));
        assert!(publish.contains("INTO [dbo].[FencedOperation]"));
        assert!(publish.contains("[LeaseOwner] = NULL"));
        for proc in p.procedure_batches() {
            assert!(!proc.contains("@P"), "unnamed placeholder left: {proc}");
            assert!(!proc.contains("GETDATE"), "{proc}");
        }
        assert!(
            p.procedure(Procedure::AdvanceEpoch)
                .contains("CAST(@Floor AS bigint)")
        );
    }

    #[test]
    fn many_columns_keep_their_numbers_apart() {
        let mut builder = FencedTable::builder().table("dbo.Wide");
        for i in 0..12 {
            builder = builder.column(format!("C{i}"), ColumnType::Text);
        }
        let p = MssqlProcedures::new(&builder.build().unwrap()).unwrap();
        let publish = p.procedure(Procedure::Publish);
        assert!(publish.contains("[C0] = @p_C0, "), "{publish}");
        assert!(publish.contains("[C11] = @p_C11, "), "{publish}");
        assert!(publish.contains(
            "[ReportId] = @Key AND [Generation] = @Generation AND [LeaseOwner] = @Owner"
        ));
        assert!(!publish.contains("@P"), "{publish}");
    }

    #[test]
    fn calls_bind_in_the_guards_parameter_order() {
        let p = procedures();
        assert_eq!(
            p.call(Procedure::Publish, true),
            "EXEC [dbo].[ReportPublication_Publish] @p_Payload = @P1, @p_Pages = @P2, @Key = @P3, \
             @Generation = @P4, @Owner = @P5, @OperationId = @P6"
        );
        assert_eq!(
            p.call(Procedure::Acquire, false),
            "EXEC [dbo].[ReportPublication_Acquire] @Key = @P1, @Owner = @P2, @TtlMs = @P3"
        );
    }

    #[test]
    fn permissions_grant_execute_and_deny_writes() {
        let p = procedures().with_role("ReportService").unwrap();
        let batches = p.permission_batches();
        assert_eq!(
            batches[0],
            "IF DATABASE_PRINCIPAL_ID(N'ReportService') IS NULL CREATE ROLE [ReportService]"
        );
        assert_eq!(
            batches
                .iter()
                .filter(|b| b.starts_with("GRANT EXECUTE"))
                .count(),
            Procedure::ALL.len()
        );
        for table in [
            "[dbo].[ReportPublication]",
            "[dbo].[FencedOperation]",
            "[dbo].[FencedEpoch]",
        ] {
            assert!(batches.contains(&format!(
                "DENY UPDATE, INSERT, DELETE ON OBJECT::{table} TO [ReportService]"
            )));
        }
        assert!(
            !batches
                .iter()
                .any(|b| b.starts_with("GRANT") && b.contains("UPDATE"))
        );
        assert!(p.permissions_script().ends_with("GO\n"));
        assert!(procedures().with_role("x]; DROP").is_err());
    }

    #[test]
    fn names_that_would_be_too_long_are_an_error() {
        let t = FencedTable::builder()
            .table("a".repeat(120))
            .key_type(KeyType::BigInt)
            .build()
            .unwrap();
        assert!(matches!(
            MssqlProcedures::new(&t),
            Err(crate::Error::InvalidIdentifier { .. })
        ));
    }
}
