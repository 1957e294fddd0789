//! `unfenced-write` (FL001).

use super::fence::Presence;
use super::{Context, Finding, Rule, required};
use crate::sql::Predicate;

pub(crate) const DOC: &str = "\
# unfenced-write (FL001)

## What it does
Flags an `UPDATE` of a fenced table, or the update arm of a `MERGE` or of an
`INSERT ... ON CONFLICT DO UPDATE`, whose top-level `AND`-ed `WHERE` lacks one of the
fence predicates: `key = value`, `generation = value`, `owner = value`, and
`expiry > <database clock>`. A release (clearing only the owner and expiry) needs key,
generation and owner but no expiry check; an acquisition (`generation = generation + 1`)
needs the key (its is-free check is `unchecked-acquire`'s business).

## Why is this bad?
A worker whose lease expired can resume after a pause and still run this statement: the
database accepts it and overwrites the successor's work. Only predicates evaluated by the
database as part of the write reject a superseded owner.

## Example
```sql
UPDATE dbo.ReportPublication
SET Payload = @payload
WHERE ReportId = @reportId;
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
    for (facts, arm) in context.arms.iter().zip(&context.statement.updates) {
        let mut missing: Vec<(&str, String)> = required(context, facts)
            .into_iter()
            .filter(|(_, presence, _)| *presence == Presence::Absent)
            .map(|(what, _, predicate)| (what, predicate))
            .collect();
        // The expiry check has its own rules when it is there but wrong, or on a renewal.
        if !facts.client_clock.is_empty() || facts.operation == super::fence::Operation::Renew {
            missing.retain(|(what, _)| *what != "unexpired lease");
        }
        if missing.is_empty() {
            continue;
        }
        let names: Vec<&str> = missing.iter().map(|(what, _)| *what).collect();
        // Columns of missing predicates that the condition does mention, inside an
        // expression (`DATEDIFF(...) > 0`, a row value, `NOT (a <> x OR ...)`).
        let mentioned = mentioned_columns(context, arm);
        let buried: Vec<&str> = names
            .iter()
            .filter_map(|what| column_of(table, what))
            .filter(|column| mentioned.iter().any(|m| m.eq_ignore_ascii_case(column)))
            .collect();
        let message = if facts.has_condition && !buried.is_empty() {
            format!(
                "write to fenced table `{}` does not require the {} in its top-level WHERE: `{}` {} only inside an expression, and a fence predicate must be a plain conjunct (`column = value`, `expiry > clock`) of the top-level AND",
                table.display_name(),
                english_list(&names),
                buried.join("`, `"),
                if buried.len() == 1 {
                    "appears"
                } else {
                    "appear"
                }
            )
        } else if facts.has_condition {
            format!(
                "write to fenced table `{}` does not require the {} in its top-level WHERE",
                table.display_name(),
                english_list(&names)
            )
        } else {
            format!(
                "write to fenced table `{}` has no WHERE clause and so no fence",
                table.display_name()
            )
        };
        let predicates: Vec<String> = missing.into_iter().map(|(_, p)| p).collect();
        out.push(context.finding(
            Rule::UnfencedWrite,
            message,
            Some(format!(
                "add `AND {}` to the WHERE clause",
                predicates.join(" AND ")
            )),
        ));
    }
}

/// The fence column a missing predicate is about.
fn column_of<'a>(table: &'a crate::config::TableSpec, what: &str) -> Option<&'a str> {
    match what {
        "key" => Some(&table.key),
        "generation" => Some(&table.generation),
        "owner" => Some(&table.owner),
        "unexpired lease" => Some(&table.expiry),
        _ => None,
    }
}

/// The target's columns named anywhere in an arm's conditions.
fn mentioned_columns(context: &Context<'_>, arm: &crate::sql::UpdateArm) -> Vec<String> {
    let mut out = Vec::new();
    for condition in &arm.conditions {
        for (leaf, _) in condition.leaves() {
            let operands: Vec<&crate::sql::Operand> = match leaf {
                Predicate::Compare { left, right, .. } => vec![left, right],
                Predicate::IsNull { operand, .. } => vec![operand],
                Predicate::Other { operands } => operands.iter().collect(),
                _ => Vec::new(),
            };
            for operand in operands {
                for column in &operand.columns {
                    if super::fence::is_target_column(context.statement, column, &column.name) {
                        out.push(column.name.clone());
                    }
                }
            }
        }
    }
    out
}

/// `a`, `a and b`, `a, b and c`: the missing predicates as a reader would list them.
fn english_list(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [only] => (*only).to_owned(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use crate::rules::Rule;
    use crate::rules::test_support::{ACQUIRE, PUBLISH, RELEASE, RENEW, cases};

    cases! { Rule::UnfencedWrite;
        article_publish: PUBLISH => false;
        article_acquire: ACQUIRE => false;
        article_release: RELEASE => false;
        article_renew: RENEW => false;
        key_only: "UPDATE dbo.ReportPublication SET Payload = @p WHERE ReportId = @id" => true;
        fence_in_inner_join_on: "UPDATE r SET Payload = p.Body FROM dbo.ReportPublication r INNER JOIN dbo.Pending p ON p.ReportId = r.ReportId AND r.Generation = @g AND r.LeaseOwner = @o AND r.LeaseUntilUtc > SYSUTCDATETIME() WHERE r.ReportId = @id" => false;
        fence_in_plain_join_on: "UPDATE r SET Payload = p.Body FROM dbo.ReportPublication r JOIN dbo.Pending p ON p.ReportId = r.ReportId AND r.Generation = @g AND r.LeaseOwner = @o AND r.LeaseUntilUtc > SYSUTCDATETIME() WHERE r.ReportId = @id" => false;
        fence_split_between_on_and_where: "UPDATE r SET Payload = p.Body FROM dbo.ReportPublication r INNER JOIN dbo.Pending p ON p.ReportId = r.ReportId AND r.Generation = @g WHERE r.ReportId = @id AND r.LeaseOwner = @o AND r.LeaseUntilUtc > SYSUTCDATETIME()" => false;
        fence_in_left_join_on: "UPDATE r SET Payload = p.Body FROM dbo.ReportPublication r LEFT JOIN dbo.Pending p ON p.ReportId = r.ReportId AND r.Generation = @g AND r.LeaseOwner = @o AND r.LeaseUntilUtc > SYSUTCDATETIME() WHERE r.ReportId = @id" => true;
        fence_in_right_outer_join_on: "UPDATE r SET Payload = p.Body FROM dbo.Pending p RIGHT OUTER JOIN dbo.ReportPublication r ON p.ReportId = r.ReportId AND r.Generation = @g AND r.LeaseOwner = @o AND r.LeaseUntilUtc > SYSUTCDATETIME() WHERE r.ReportId = @id" => true;
        // The parser stops at `=>`: what follows might be an `OR`, so the ON counts for nothing.
        fence_in_on_not_read_to_its_end: "UPDATE r SET Payload = p.Body FROM dbo.ReportPublication r INNER JOIN dbo.Pending p ON p.ReportId = r.ReportId AND r.Generation = @g AND r.LeaseOwner = @o AND r.LeaseUntilUtc > SYSUTCDATETIME() => 1 OR 1 = 1" => true;
        inner_join_on_without_fence: "UPDATE r SET Payload = p.Body FROM dbo.ReportPublication r INNER JOIN dbo.Pending p ON p.ReportId = r.ReportId WHERE r.ReportId = @id" => true;
        no_where: "UPDATE ReportPublication SET Payload = @p" => true;
        missing_expiry: "UPDATE [dbo].[ReportPublication] SET Payload = @p WHERE ReportId = @id AND Generation = @g AND LeaseOwner = @o" => true;
        missing_owner_bracketed: "UPDATE [ReportPublication] SET [Payload] = @p WHERE [ReportId] = @id AND [Generation] = @g AND [LeaseUntilUtc] > SYSUTCDATETIME()" => true;
        other_schema_is_not_fenced: "UPDATE audit.ReportPublication SET Payload = @p" => false;
        other_table: "UPDATE dbo.Other SET Payload = @p" => false;
        release_without_generation: "UPDATE dbo.ReportPublication SET LeaseOwner = NULL, LeaseUntilUtc = NULL WHERE ReportId = @id AND LeaseOwner = @o" => true;
        publish_and_release_needs_expiry: "UPDATE dbo.ReportPublication SET Payload = @p, LeaseOwner = NULL WHERE ReportId = @id AND Generation = @g AND LeaseOwner = @o" => true;
        alias_from: "UPDATE r SET Payload = @p FROM dbo.ReportPublication r WHERE r.ReportId = @id" => true;
        alias_from_fenced: "UPDATE r SET Payload = @p FROM dbo.ReportPublication AS r WHERE r.ReportId = @id AND r.Generation = @g AND r.LeaseOwner = @o AND r.LeaseUntilUtc > SYSUTCDATETIME()" => false;
        top_and_option: "UPDATE TOP (1) dbo.ReportPublication SET Payload = @p WHERE ReportId = @id OPTION (RECOMPILE)" => true;
        postgres_fenced: "UPDATE report_publication SET payload = $1 WHERE report_id = $2 AND generation = $3 AND lease_owner = $4 AND lease_until > clock_timestamp() RETURNING generation" => false;
        postgres_unfenced: "UPDATE \"report_publication\" SET payload = $1 WHERE report_id = $2 RETURNING generation" => true;
        upsert_unfenced: "INSERT INTO report_publication (report_id, payload) VALUES ($1, $2) ON CONFLICT (report_id) DO UPDATE SET payload = excluded.payload" => true;
        upsert_fenced: "INSERT INTO report_publication AS t (report_id, payload) VALUES ($1, $2) ON CONFLICT (report_id) DO UPDATE SET payload = excluded.payload WHERE t.generation = $3 AND t.lease_owner = $4 AND t.lease_until > now()" => false;
        merge_unfenced: "MERGE dbo.ReportPublication AS t USING (SELECT @id AS ReportId) AS s ON t.ReportId = s.ReportId WHEN MATCHED THEN UPDATE SET Payload = @p;" => true;
        merge_fenced: "MERGE dbo.ReportPublication AS t USING (SELECT @id AS ReportId) AS s ON t.ReportId = s.ReportId WHEN MATCHED AND t.Generation = @g AND t.LeaseOwner = @o AND t.LeaseUntilUtc > SYSUTCDATETIME() THEN UPDATE SET Payload = @p;" => false;
        cte_target: "WITH c AS (SELECT TOP 1 * FROM dbo.ReportPublication WHERE ReportId = @id) UPDATE c SET Payload = @p" => true;
        // The T-SQL dequeue idiom: the CTE's WHERE restricts the rows written.
        cte_target_fenced: "WITH c AS (SELECT TOP (1) * FROM dbo.ReportPublication WITH (ROWLOCK, READPAST) WHERE ReportId = @id AND Generation = @g AND LeaseOwner = @o AND LeaseUntilUtc > SYSUTCDATETIME() ORDER BY ReportId) UPDATE c SET Payload = @p" => false;
        cte_target_fenced_in_a_join: "WITH c AS (SELECT TOP (1) r.* FROM dbo.ReportPublication r JOIN dbo.Other o ON o.Id = r.ReportId WHERE r.ReportId = @id AND r.Generation = @g AND r.LeaseOwner = @o AND r.LeaseUntilUtc > SYSUTCDATETIME()) UPDATE c SET Payload = @p" => true;
        cte_target_partly_fenced: "WITH c AS (SELECT TOP (1) * FROM dbo.ReportPublication WHERE ReportId = @id AND Generation = @g ORDER BY ReportId) UPDATE c SET Payload = @p" => true;
        // PostgreSQL and SQLite update the fenced table named after UPDATE, whatever
        // SQL Server's alias rule makes of it; the qualified fence is the alias's.
        alias_spelled_like_the_fenced_table: "UPDATE ReportPublication SET Payload = @p FROM dbo.Pending AS ReportPublication WHERE ReportPublication.ReportId = @id AND ReportPublication.Generation = @g AND ReportPublication.LeaseOwner = @o AND ReportPublication.LeaseUntilUtc > SYSUTCDATETIME()" => true;
        // The control: the fence on the table itself, unqualified, holds in every reading.
        alias_spelled_like_the_fenced_table_fenced: "UPDATE ReportPublication SET Payload = @p FROM dbo.Pending AS ReportPublication WHERE ReportId = @id AND Generation = @g AND LeaseOwner = @o AND LeaseUntilUtc > SYSUTCDATETIME() AND LeaseEpoch = (SELECT Epoch FROM FencedEpoch WHERE Id = 1)" => false;
        // SQL Server updates the table a derived table selects from.
        derived_table_target: "UPDATE r SET Payload = @p FROM (SELECT * FROM dbo.ReportPublication WHERE ReportId = @id) AS r" => true;
        derived_table_target_fenced: "UPDATE r SET Payload = @p FROM (SELECT * FROM dbo.ReportPublication WHERE ReportId = @id AND Generation = @g AND LeaseOwner = @o AND LeaseUntilUtc > SYSUTCDATETIME()) AS r" => false;
        other_table_joined_with_the_fenced_one: "UPDATE dbo.Pending SET Body = @p FROM dbo.ReportPublication AS r WHERE r.ReportId = Pending.ReportId" => false;
        in_procedure_without_semicolons: "CREATE PROCEDURE dbo.P @id uniqueidentifier, @p nvarchar(max) AS BEGIN UPDATE dbo.ReportPublication SET Payload = @p WHERE ReportId = @id SELECT @@ROWCOUNT END" => true;
        sqlite_subsec: "UPDATE report_publication SET payload = ?1 WHERE report_id = ?2 AND generation = ?3 AND lease_owner = ?4 AND lease_until > unixepoch('subsec') * 1000" => false;
        sqlite_fenced_now: "UPDATE report_publication SET payload = ?1 WHERE report_id = ?2 AND generation = ?3 AND lease_owner = ?4 AND lease_until > CAST(unixepoch('subsec', 'now') * 1000 AS INTEGER)" => false;
    }
}
