//! `client-clock-expiry` (FL003).

use super::{Context, Finding, Rule};

pub(crate) const DOC: &str = "\
# client-clock-expiry (FL003)

## What it does
Flags a write to a fenced table that compares the lease expiry with a parameter, a
variable or a literal instead of the database clock (`SYSUTCDATETIME()`,
`clock_timestamp()`, `now()`, SQLite `unixepoch(...)`, and arithmetic on these).

## Why is this bad?
The application's clock is the one that lies: the worker computed `@now` before its
pause, so the comparison says the lease is still valid long after it expired. Clocks of
different machines also drift. Only the database's clock, read while the row is locked,
decides validity for every writer alike.

## Example
```sql
UPDATE dbo.ReportPublication
SET Payload = @payload
WHERE ReportId = @reportId AND Generation = @generation AND LeaseOwner = @owner
  AND LeaseUntilUtc > @now;
```

## Use instead
```sql
UPDATE dbo.ReportPublication
SET Payload = @payload
WHERE ReportId = @reportId AND Generation = @generation AND LeaseOwner = @owner
  AND LeaseUntilUtc > SYSUTCDATETIME()
  AND LeaseEpoch = (SELECT Epoch FROM FencedEpoch WHERE Id = 1);
```
";

pub(crate) fn check(context: &Context<'_>, out: &mut Vec<Finding>) {
    let Some(table) = context.table else { return };
    if context
        .arms
        .iter()
        .any(|facts| !facts.client_clock.is_empty())
    {
        out.push(context.finding(
            Rule::ClientClockExpiry,
            format!("the expiry `{}` of fenced table `{}` is compared with a client-supplied value instead of the database clock", table.expiry, table.display_name()),
            Some("compare with the database clock: `SYSUTCDATETIME()` (SQL Server), `clock_timestamp()` (PostgreSQL), `unixepoch('subsec')` (SQLite)".to_owned()),
        ));
    }
}

#[cfg(test)]
mod tests {
    use crate::rules::Rule;
    use crate::rules::test_support::{ACQUIRE, PUBLISH, RELEASE, RENEW, cases};

    cases! { Rule::ClientClockExpiry;
        article_publish: PUBLISH => false;
        article_acquire: ACQUIRE => false;
        article_release: RELEASE => false;
        article_renew: RENEW => false;
        parameter: "UPDATE dbo.ReportPublication SET Payload = @p WHERE ReportId = @id AND Generation = @g AND LeaseOwner = @o AND LeaseUntilUtc > @now" => true;
        literal: "UPDATE dbo.ReportPublication SET Payload = @p WHERE ReportId = @id AND Generation = @g AND LeaseOwner = @o AND LeaseUntilUtc > '2024-01-01'" => true;
        flipped: "UPDATE dbo.ReportPublication SET Payload = @p WHERE ReportId = @id AND Generation = @g AND LeaseOwner = @o AND @now < LeaseUntilUtc" => true;
        acquire_with_client_clock: "UPDATE dbo.ReportPublication SET Generation = Generation + 1 WHERE ReportId = @id AND (LeaseUntilUtc IS NULL OR LeaseUntilUtc <= @now)" => true;
        postgres_positional: "UPDATE report_publication SET payload = $1 WHERE report_id = $2 AND generation = $3 AND lease_owner = $4 AND lease_until > $5" => true;
        clock_arithmetic: "UPDATE dbo.ReportPublication SET Payload = @p WHERE ReportId = @id AND Generation = @g AND LeaseOwner = @o AND LeaseUntilUtc > DATEADD(second, 1, GETUTCDATE())" => false;
        postgres_now: "UPDATE report_publication SET payload = $1 WHERE report_id = $2 AND generation = $3 AND lease_owner = $4 AND lease_until > now() + interval '1 second'" => false;
    }
}
