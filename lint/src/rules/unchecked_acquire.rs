//! `unchecked-acquire` (FL004).

use super::fence::Operation;
use super::{Context, Finding, Rule};

pub(crate) const DOC: &str = "\
# unchecked-acquire (FL004)

## What it does
Flags an acquisition (`SET generation = generation + 1`) on a fenced table whose
top-level `WHERE` does not require the lease to be free: `expiry IS NULL OR expiry <=
<database clock>` (or `owner IS NULL`). Further `OR` branches on the row's own state are
accepted (`OR LeaseEpoch <> <current epoch>` after a restore, `OR LeaseOwner = @owner`
for a re-entrant acquire); a branch that looks at no column of the row (`OR @force = 1`)
is not, since it lets any caller take a held lease.

## Why is this bad?
Without the is-free check any worker takes the lease at any time, including while
another holds it and is about to publish: the current owner is superseded mid-work and
two workers believe they own the row in turn. The generation keeps them ordered, but the
lease stops meaning anything.

## Example
```sql
UPDATE dbo.ReportPublication
SET Generation = Generation + 1, LeaseOwner = @owner,
    LeaseUntilUtc = DATEADD(second, @leaseSeconds, SYSUTCDATETIME())
WHERE ReportId = @reportId;
```

## Use instead
```sql
UPDATE dbo.ReportPublication
SET Generation = Generation + 1, LeaseOwner = @owner,
    LeaseUntilUtc = DATEADD(second, @leaseSeconds, SYSUTCDATETIME())
WHERE ReportId = @reportId
  AND (LeaseUntilUtc IS NULL OR LeaseUntilUtc <= SYSUTCDATETIME());
```
";

pub(crate) fn check(context: &Context<'_>, out: &mut Vec<Finding>) {
    let Some(table) = context.table else { return };
    if context
        .arms
        .iter()
        .any(|facts| facts.operation == Operation::Acquire && !facts.lease_free)
    {
        out.push(context.finding(
            Rule::UncheckedAcquire,
            format!("the generation of fenced table `{}` is incremented without requiring the lease to be free", table.display_name()),
            Some(format!(
                "add `AND ({expiry} IS NULL OR {expiry} <= <database clock>)` to the WHERE clause",
                expiry = table.expiry
            )),
        ));
    }
}

#[cfg(test)]
mod tests {
    use crate::rules::Rule;
    use crate::rules::test_support::{ACQUIRE, PUBLISH, RELEASE, RENEW, cases};

    cases! { Rule::UncheckedAcquire;
        article_publish: PUBLISH => false;
        article_acquire: ACQUIRE => false;
        article_release: RELEASE => false;
        article_renew: RENEW => false;
        key_only: "UPDATE dbo.ReportPublication SET Generation = Generation + 1, LeaseOwner = @o WHERE ReportId = @id" => true;
        recovery_epoch_takeover: "UPDATE \"ReportPublication\" SET \"Generation\" = \"Generation\" + 1, \"LeaseOwner\" = ?2, \"LeaseEpoch\" = (SELECT \"Epoch\" FROM \"FencedEpoch\" WHERE \"Id\" = 1) WHERE \"ReportId\" = ?1 AND (\"LeaseUntilUtc\" IS NULL OR \"LeaseUntilUtc\" <= CAST(unixepoch('subsec') * 1000 AS INTEGER) OR \"LeaseEpoch\" <> (SELECT \"Epoch\" FROM \"FencedEpoch\" WHERE \"Id\" = 1)) RETURNING \"Generation\"" => false;
        reentrant_by_same_owner: "UPDATE dbo.ReportPublication SET Generation = Generation + 1 WHERE ReportId = @id AND (LeaseUntilUtc <= SYSUTCDATETIME() OR LeaseOwner = @owner)" => false;
        only_row_conditions_without_free_test: "UPDATE dbo.ReportPublication SET Generation = Generation + 1 WHERE ReportId = @id AND (Payload IS NULL OR PublishedGeneration = 0)" => true;
        free_test_under_or_with_other: "UPDATE dbo.ReportPublication SET Generation = Generation + 1 WHERE ReportId = @id AND (LeaseUntilUtc IS NULL OR @force = 1)" => true;
        one_plus_generation: "UPDATE dbo.ReportPublication SET Generation = 1 + Generation WHERE ReportId = @id" => true;
        expired_only: "UPDATE dbo.ReportPublication SET Generation = Generation + 1 WHERE ReportId = @id AND LeaseUntilUtc < SYSUTCDATETIME()" => false;
        postgres_acquire: "UPDATE report_publication SET generation = generation + 1, lease_owner = $2, lease_until = clock_timestamp() + $3 * interval '1 second' WHERE report_id = $1 AND (lease_until IS NULL OR lease_until <= clock_timestamp()) RETURNING generation" => false;
        merge_acquire_unchecked: "MERGE INTO dbo.ReportPublication t USING (VALUES (@id)) s(ReportId) ON t.ReportId = s.ReportId WHEN MATCHED THEN UPDATE SET Generation = t.Generation + 1;" => true;
    }
}
