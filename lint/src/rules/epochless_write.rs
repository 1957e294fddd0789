//! `epochless-write` (FL014).

use super::fence::{Operation, Presence};
use super::{Context, Finding, Rule};
use crate::config::TableSpec;
use crate::sql::ParamStyle;

pub(crate) const DOC: &str = "\
# epochless-write (FL014)

## What it does
Flags a write to a fenced table (an `UPDATE`, or the update arm of a `MERGE` or of an
`INSERT ... ON CONFLICT DO UPDATE`), or a renewal, that requires the key, the
generation, the owner and an unexpired lease but not the recovery epoch: no top-level
`AND`-ed conjunct `epoch = (<subquery reading the epoch table>)`, such as
`LeaseEpoch = (SELECT Epoch FROM FencedEpoch WHERE Id = 1)`. A write that lacks more is
`unfenced-write`'s business; a release (clearing only the owner and expiry) and an
acquisition need no epoch check.

Any subquery that reads the epoch table counts, the guard's PostgreSQL stamp
`(SELECT \"Epoch\" * 1000000 + <timeline> FROM \"FencedEpoch\" WHERE \"Id\" = 1)`
included. A parameter does not (`LeaseEpoch = @epoch`): it is the epoch the application
holds, not the database's current one, so a worker that resumes after a restore sends
the old epoch and matches the restored row. A check under `OR` or `NOT` constrains
nothing and does not count either.

The epoch column (default `LeaseEpoch`) and the epoch table (default `FencedEpoch`, in
any schema) are the table's `epoch` and `epoch_table` in the configuration; a table
created before the epoch existed says `epoch = false` and is not checked.

## Why is this bad?
A restore or a failover brings back rows as they were: the generation, the owner and a
still-future expiry of a lease that was superseded after the snapshot was taken. Its old
holder passes the generation, owner and expiry checks again and overwrites what its
successor wrote. `advance_epoch` fences off every lease issued before it by raising the
epoch table's epoch, but only for writes that compare the row's epoch with it.

## Example
```sql
UPDATE dbo.ReportPublication
SET Payload = @payload
WHERE ReportId = @reportId
  AND Generation = @generation
  AND LeaseOwner = @owner
  AND LeaseUntilUtc > SYSUTCDATETIME();
```

## Use instead
```sql
UPDATE dbo.ReportPublication
SET Payload = @payload
WHERE ReportId = @reportId
  AND Generation = @generation
  AND LeaseOwner = @owner
  AND LeaseUntilUtc > SYSUTCDATETIME()
  AND LeaseEpoch = (SELECT Epoch FROM FencedEpoch WHERE Id = 1);
```
";

pub(crate) fn check(context: &Context<'_>, out: &mut Vec<Finding>) {
    let Some(table) = context.table else { return };
    let Some(epoch) = &table.epoch else { return };
    for facts in &context.arms {
        if !matches!(facts.operation, Operation::Write | Operation::Renew)
            || facts.epoch == Presence::Required
        {
            continue;
        }
        // Only a write the other fence rules pass: one that lacks more is theirs first.
        let fenced = [facts.key, facts.generation, facts.owner, facts.unexpired]
            .iter()
            .all(|p| *p == Presence::Required)
            && facts.client_clock.is_empty();
        if !fenced {
            continue;
        }
        let epoch_table = table.epoch_table_display_name();
        let postgres = matches!(context.statement.param_style, ParamStyle::Numbered(_));
        let predicate = epoch_predicate(postgres, epoch, table);
        // On PostgreSQL the guard stamps the server's timeline with the epoch.
        let stamp = if postgres {
            ": the guard's stamp, which `fenced_guard::dialect::epoch_subquery` writes in full (without the timeline for a table built with `stamp_timeline(false)`)"
        } else {
            ""
        };
        let (message, help) = if facts.epoch == Presence::OnlyGuarded {
            (
                format!(
                    "the recovery epoch check of fenced table `{}` appears only under OR or NOT, where it does not constrain the write",
                    table.display_name()
                ),
                format!(
                    "parenthesise the other conditions and require `{predicate}` with a top-level AND{stamp}"
                ),
            )
        } else {
            (
                format!(
                    "write to fenced table `{}` does not require the recovery epoch: `{epoch}` is not compared with the current epoch in `{epoch_table}`, so after a restore or failover a superseded lease can write again",
                    table.display_name()
                ),
                format!("add `AND {predicate}` to the WHERE clause{stamp}"),
            )
        };
        out.push(context.finding(Rule::EpochlessWrite, message, Some(help)));
    }
}

/// The conjunct to add, as the guard writes it: on PostgreSQL (`$n` parameters) quoted,
/// with the server's timeline in the stamp.
fn epoch_predicate(postgres: bool, epoch: &str, table: &TableSpec) -> String {
    if postgres {
        let name = match &table.epoch_table_schema {
            Some(schema) => format!("\"{schema}\".\"{}\"", table.epoch_table),
            None => format!("\"{}\"", table.epoch_table),
        };
        format!(
            "\"{epoch}\" = (SELECT \"Epoch\" * 1000000 + <timeline> FROM {name} WHERE \"Id\" = 1)"
        )
    } else {
        let name = table.epoch_table_display_name();
        format!("{epoch} = (SELECT Epoch FROM {name} WHERE Id = 1)")
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::config::Config;
    use crate::linter::Linter;
    use crate::rules::Rule;
    use crate::rules::test_support::{ACQUIRE, PUBLISH, RELEASE, RENEW, cases};

    const FENCE: &str = "ReportId = @id AND Generation = @g AND LeaseOwner = @o AND LeaseUntilUtc > SYSUTCDATETIME()";

    cases! { Rule::EpochlessWrite;
        article_publish: PUBLISH => false;
        article_acquire: ACQUIRE => false;
        article_release: RELEASE => false;
        article_renew: RENEW => false;
        // The negative control: fenced by generation, owner and expiry, not by the epoch.
        without_epoch: &format!("UPDATE dbo.ReportPublication SET Payload = @p WHERE {FENCE}") => true;
        with_epoch: &format!("UPDATE dbo.ReportPublication SET Payload = @p WHERE {FENCE} AND LeaseEpoch = (SELECT Epoch FROM FencedEpoch WHERE Id = 1)") => false;
        // The guard's own text, per dialect (`guard/src/dialect`).
        guard_mssql_bracketed: "UPDATE [dbo].[ReportPublication] SET [Payload] = @P1 WHERE [ReportId] = @P2 AND [Generation] = @P3 AND [LeaseOwner] = @P4 AND [LeaseUntilUtc] > SYSUTCDATETIME() AND [LeaseEpoch] = (SELECT [Epoch] FROM [dbo].[FencedEpoch] WHERE [Id] = 1)" => false;
        guard_postgres_timeline_stamp: r#"UPDATE "dbo"."ReportPublication" SET "Payload" = $1 WHERE "ReportId" = $2 AND "Generation" = $3 AND "LeaseOwner" = $4 AND "LeaseUntilUtc" > clock_timestamp() AND "LeaseEpoch" = (SELECT "Epoch" * 1000000 + ('x' || substr(pg_catalog.pg_walfile_name(pg_catalog.pg_current_wal_lsn()), 1, 8))::bit(32)::bigint FROM "dbo"."FencedEpoch" WHERE "Id" = 1)"# => false;
        guard_postgres_without_epoch: r#"UPDATE "dbo"."ReportPublication" SET "Payload" = $1 WHERE "ReportId" = $2 AND "Generation" = $3 AND "LeaseOwner" = $4 AND "LeaseUntilUtc" > clock_timestamp()"# => true;
        guard_sqlite_quoted: r#"UPDATE "ReportPublication" SET "Payload" = ?1 WHERE "ReportId" = ?2 AND "Generation" = ?3 AND "LeaseOwner" = ?4 AND "LeaseUntilUtc" > CAST(unixepoch('subsec') * 1000 AS INTEGER) AND "LeaseEpoch" = (SELECT "Epoch" FROM "FencedEpoch" WHERE "Id" = 1)"# => false;
        epoch_table_in_another_schema: &format!("UPDATE dbo.ReportPublication SET Payload = @p WHERE {FENCE} AND LeaseEpoch = (SELECT Epoch FROM ops.FencedEpoch WHERE Id = 1)") => false;
        subquery_first: &format!("UPDATE dbo.ReportPublication SET Payload = @p WHERE {FENCE} AND (SELECT Epoch FROM FencedEpoch WHERE Id = 1) = LeaseEpoch") => false;
        qualified_by_alias: "UPDATE r SET Payload = @p FROM dbo.ReportPublication AS r WHERE r.ReportId = @id AND r.Generation = @g AND r.LeaseOwner = @o AND r.LeaseUntilUtc > SYSUTCDATETIME() AND r.LeaseEpoch = (SELECT e.Epoch FROM dbo.FencedEpoch AS e WHERE e.Id = 1)" => false;
        // The application's epoch is not the database's.
        epoch_parameter: &format!("UPDATE dbo.ReportPublication SET Payload = @p WHERE {FENCE} AND LeaseEpoch = @epoch") => true;
        epoch_or_parameter: &format!("UPDATE dbo.ReportPublication SET Payload = @p WHERE {FENCE} AND LeaseEpoch = COALESCE((SELECT Epoch FROM FencedEpoch WHERE Id = 1), @epoch)") => true;
        subquery_of_another_table: &format!("UPDATE dbo.ReportPublication SET Payload = @p WHERE {FENCE} AND LeaseEpoch = (SELECT Epoch FROM dbo.Settings WHERE Id = 1)") => true;
        other_column_compared: &format!("UPDATE dbo.ReportPublication SET Payload = @p WHERE {FENCE} AND Generation = (SELECT Epoch FROM FencedEpoch WHERE Id = 1)") => true;
        not_equal: &format!("UPDATE dbo.ReportPublication SET Payload = @p WHERE {FENCE} AND LeaseEpoch <> (SELECT Epoch FROM FencedEpoch WHERE Id = 1)") => true;
        epoch_under_or: &format!("UPDATE dbo.ReportPublication SET Payload = @p WHERE {FENCE} AND (LeaseEpoch = (SELECT Epoch FROM FencedEpoch WHERE Id = 1) OR @force = 1)") => true;
        epoch_under_not: &format!("UPDATE dbo.ReportPublication SET Payload = @p WHERE {FENCE} AND NOT (LeaseEpoch = (SELECT Epoch FROM FencedEpoch WHERE Id = 1))") => true;
        // Whatever lacks more is `unfenced-write`'s, or `fence-in-disjunction`'s.
        key_only: "UPDATE dbo.ReportPublication SET Payload = @p WHERE ReportId = @id" => false;
        whole_fence_under_or: &format!("UPDATE dbo.ReportPublication SET Payload = @p WHERE {FENCE} AND LeaseEpoch = (SELECT Epoch FROM FencedEpoch WHERE Id = 1) OR Payload IS NULL") => false;
        client_clock: "UPDATE dbo.ReportPublication SET Payload = @p WHERE ReportId = @id AND Generation = @g AND LeaseOwner = @o AND LeaseUntilUtc > @now" => false;
        renewal_without_epoch: &format!("UPDATE dbo.ReportPublication SET LeaseUntilUtc = DATEADD(second, 30, SYSUTCDATETIME()) WHERE {FENCE}") => true;
        release_without_epoch: "UPDATE dbo.ReportPublication SET LeaseOwner = NULL, LeaseUntilUtc = NULL WHERE ReportId = @id AND Generation = @g AND LeaseOwner = @o" => false;
        merge_without_epoch: "MERGE dbo.ReportPublication AS t USING (SELECT @id AS ReportId) AS s ON t.ReportId = s.ReportId WHEN MATCHED AND t.Generation = @g AND t.LeaseOwner = @o AND t.LeaseUntilUtc > SYSUTCDATETIME() THEN UPDATE SET Payload = @p;" => true;
        merge_with_epoch: "MERGE dbo.ReportPublication AS t USING (SELECT @id AS ReportId) AS s ON t.ReportId = s.ReportId WHEN MATCHED AND t.Generation = @g AND t.LeaseOwner = @o AND t.LeaseUntilUtc > SYSUTCDATETIME() AND t.LeaseEpoch = (SELECT Epoch FROM dbo.FencedEpoch WHERE Id = 1) THEN UPDATE SET Payload = @p;" => false;
        upsert_without_epoch: "INSERT INTO report_publication AS t (report_id, payload) VALUES ($1, $2) ON CONFLICT (report_id) DO UPDATE SET payload = excluded.payload WHERE t.generation = $3 AND t.lease_owner = $4 AND t.lease_until > now()" => true;
        upsert_with_epoch: "INSERT INTO report_publication AS t (report_id, payload) VALUES ($1, $2) ON CONFLICT (report_id) DO UPDATE SET payload = excluded.payload WHERE t.generation = $3 AND t.lease_owner = $4 AND t.lease_until > now() AND t.lease_epoch = (SELECT \"Epoch\" * 1000000 + 1 FROM \"FencedEpoch\" WHERE \"Id\" = 1)" => false;
        other_table: "UPDATE dbo.Other SET Payload = @p WHERE Id = @id" => false;
    }

    fn findings(config: &str, sql: &str) -> Vec<(Rule, Option<String>)> {
        let config = Config::from_toml(config).unwrap();
        Linter::new(&config)
            .check_file(Path::new("t.sql"), sql.as_bytes())
            .diagnostics
            .into_iter()
            .map(|d| (d.rule, d.help))
            .collect()
    }

    #[test]
    fn a_table_without_an_epoch_is_not_required_to_check_one() {
        let sql = format!("UPDATE dbo.ReportPublication SET Payload = @p WHERE {FENCE};");
        let table = "[[table]]\nname = \"dbo.ReportPublication\"\nkey = \"ReportId\"\n";
        assert_eq!(findings(&format!("{table}epoch = false\n"), &sql), []);
        // The control: the same statement, the same table with its default epoch column.
        let found = findings(table, &sql);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].0, Rule::EpochlessWrite);
    }

    #[test]
    fn configured_epoch_column_and_table() {
        let config = "[[table]]\nname = \"dbo.ReportPublication\"\nkey = \"ReportId\"\nepoch = \"RecoveryEpoch\"\nepoch_table = \"ops.[Epochs]\"\n";
        let with = |conjunct: &str| {
            findings(
                config,
                &format!(
                    "UPDATE dbo.ReportPublication SET Payload = @p WHERE {FENCE} AND {conjunct};"
                ),
            )
            .into_iter()
            .map(|(rule, _)| rule)
            .collect::<Vec<_>>()
        };
        assert_eq!(
            with("RecoveryEpoch = (SELECT Epoch FROM ops.Epochs WHERE Id = 1)"),
            []
        );
        assert_eq!(
            with("RecoveryEpoch = (SELECT Epoch FROM Epochs WHERE Id = 1)"),
            []
        );
        for wrong in [
            "RecoveryEpoch = (SELECT Epoch FROM audit.Epochs WHERE Id = 1)",
            "RecoveryEpoch = (SELECT Epoch FROM FencedEpoch WHERE Id = 1)",
            "LeaseEpoch = (SELECT Epoch FROM ops.Epochs WHERE Id = 1)",
        ] {
            assert_eq!(with(wrong), [Rule::EpochlessWrite], "{wrong}");
        }
    }

    #[test]
    fn help_shows_the_conjunct_in_the_statement_s_dialect() {
        let table = "[[table]]\nname = \"dbo.ReportPublication\"\nkey = \"ReportId\"\n";
        let help = |sql: &str| findings(table, sql).remove(0).1.unwrap();
        assert_eq!(
            help(&format!(
                "UPDATE dbo.ReportPublication SET Payload = @p WHERE {FENCE}"
            )),
            "add `AND LeaseEpoch = (SELECT Epoch FROM FencedEpoch WHERE Id = 1)` to the WHERE clause"
        );
        assert_eq!(
            help(
                "UPDATE dbo.ReportPublication SET Payload = $1 WHERE ReportId = $2 AND Generation = $3 AND LeaseOwner = $4 AND LeaseUntilUtc > clock_timestamp()"
            ),
            "add `AND \"LeaseEpoch\" = (SELECT \"Epoch\" * 1000000 + <timeline> FROM \"FencedEpoch\" WHERE \"Id\" = 1)` to the WHERE clause: the guard's stamp, which `fenced_guard::dialect::epoch_subquery` writes in full (without the timeline for a table built with `stamp_timeline(false)`)"
        );
    }

    #[test]
    fn discovered_tables_have_the_epoch_their_create_table_declares() {
        let write = format!(
            "UPDATE dbo.Jobs SET Payload = @p WHERE {};",
            FENCE.replace("ReportId", "JobId")
        );
        let rules = |create: &str| {
            let text = format!("{create}\n{write}");
            let linter = Linter::new(&Config::default());
            let tables = linter.discover_tables(Path::new("t.sql"), text.as_bytes());
            assert_eq!(tables.len(), 1, "{create}");
            linter
                .with_discovered(tables)
                .check_file(Path::new("t.sql"), text.as_bytes())
                .diagnostics
                .into_iter()
                .map(|d| d.rule)
                .collect::<Vec<_>>()
        };
        let before = "CREATE TABLE dbo.Jobs (JobId uniqueidentifier PRIMARY KEY, Generation bigint, LeaseOwner uniqueidentifier, LeaseUntilUtc datetime2, Payload nvarchar(max));";
        assert_eq!(rules(before), []);
        let after = "CREATE TABLE dbo.Jobs (JobId uniqueidentifier PRIMARY KEY, Generation bigint, LeaseOwner uniqueidentifier, LeaseUntilUtc datetime2, LeaseEpoch bigint, Payload nvarchar(max));";
        assert_eq!(rules(after), [Rule::EpochlessWrite]);
    }
}
