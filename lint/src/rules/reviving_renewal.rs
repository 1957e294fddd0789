//! `reviving-renewal` (FL006).

use super::fence::{Operation, Presence};
use super::{Context, Finding, Rule};

pub(crate) const DOC: &str = "\
# reviving-renewal (FL006)

## What it does
Flags a renewal (an update of a fenced table that sets the expiry to a new value without
incrementing the generation) whose top-level `WHERE` does not require the lease to be
still unexpired: `expiry > <database clock>`.

## Why is this bad?
A late renewal from a worker whose lease already expired would revive it: for a moment
nobody held the lease, a successor may be about to acquire it, and the old owner suddenly
holds it again with its old generation. A renewal must fail once the lease has expired.

## Example
```sql
UPDATE dbo.ReportPublication
SET LeaseUntilUtc = DATEADD(second, @leaseSeconds, SYSUTCDATETIME())
WHERE ReportId = @reportId AND Generation = @generation AND LeaseOwner = @owner;
```

## Use instead
```sql
UPDATE dbo.ReportPublication
SET LeaseUntilUtc = DATEADD(second, @leaseSeconds, SYSUTCDATETIME())
WHERE ReportId = @reportId AND Generation = @generation AND LeaseOwner = @owner
  AND LeaseUntilUtc > SYSUTCDATETIME()
  AND LeaseEpoch = (SELECT Epoch FROM FencedEpoch WHERE Id = 1);
```
";

pub(crate) fn check(context: &Context<'_>, out: &mut Vec<Finding>) {
    let Some(table) = context.table else { return };
    let reviving = context.arms.iter().any(|facts| {
        facts.operation == Operation::Renew
            && facts.unexpired == Presence::Absent
            && facts.client_clock.is_empty()
    });
    if reviving {
        out.push(context.finding(
            Rule::RevivingRenewal,
            format!("the expiry of fenced table `{}` is extended without requiring the lease to be still unexpired", table.display_name()),
            Some(format!("add `AND {} > <database clock>` to the WHERE clause", table.expiry)),
        ));
    }
}

#[cfg(test)]
mod tests {
    use crate::rules::Rule;
    use crate::rules::test_support::{ACQUIRE, PUBLISH, RELEASE, RENEW, cases};

    cases! { Rule::RevivingRenewal;
        article_publish: PUBLISH => false;
        article_acquire: ACQUIRE => false;
        article_release: RELEASE => false;
        article_renew: RENEW => false;
        late_renewal: "UPDATE dbo.ReportPublication SET LeaseUntilUtc = DATEADD(second, 30, SYSUTCDATETIME()) WHERE ReportId = @id AND Generation = @g AND LeaseOwner = @o" => true;
        postgres_late_renewal: "UPDATE report_publication SET lease_until = clock_timestamp() + interval '30 seconds' WHERE report_id = $1 AND generation = $2 AND lease_owner = $3" => true;
        renewal_under_or: "UPDATE dbo.ReportPublication SET LeaseUntilUtc = DATEADD(second, 30, SYSUTCDATETIME()) WHERE ReportId = @id AND Generation = @g AND LeaseOwner = @o AND (LeaseUntilUtc > SYSUTCDATETIME() OR LeaseUntilUtc IS NULL)" => false;
    }
}
