//! `fence-in-disjunction` (FL002).

use super::fence::Presence;
use super::{Context, Finding, Rule, required};

pub(crate) const DOC: &str = "\
# fence-in-disjunction (FL002)

## What it does
Flags a write to a fenced table whose fence predicates (key, generation, owner, or
`expiry > <database clock>`) appear only under `OR` or `NOT`, not in the top-level `AND`
chain of the `WHERE` clause.

## Why is this bad?
`WHERE Generation = @generation OR @force = 1` lets the write through whenever the other
branch holds, and `AND` binds tighter than `OR`, so an unparenthesised caller condition
can silently disconnect the fence. Only a predicate every matching row must satisfy
fences the write.

## Example
```sql
UPDATE dbo.ReportPublication
SET Payload = @payload
WHERE ReportId = @reportId AND Generation = @generation
   OR LeaseOwner = @owner AND LeaseUntilUtc > SYSUTCDATETIME();
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
    for facts in &context.arms {
        // The advice is written only for an arm that has such a predicate.
        let presences = [facts.key, facts.generation, facts.owner, facts.unexpired];
        if !presences.contains(&Presence::OnlyGuarded) {
            continue;
        }
        let guarded: Vec<(&str, String)> = required(context, facts)
            .into_iter()
            .filter(|(_, presence, _)| *presence == Presence::OnlyGuarded)
            .map(|(what, _, predicate)| (what, predicate))
            .collect();
        if guarded.is_empty() {
            continue;
        }
        let names: Vec<&str> = guarded.iter().map(|(what, _)| *what).collect();
        let predicates: Vec<String> = guarded.iter().map(|(_, p)| p.clone()).collect();
        out.push(context.finding(
            Rule::FenceInDisjunction,
            format!(
                "the {} predicate of fenced table `{}` appears only under OR or NOT, where it does not constrain the write",
                names.join(", "),
                table.display_name()
            ),
            Some(format!("parenthesise the other conditions and require `{}` with a top-level AND", predicates.join(" AND "))),
        ));
    }
}

#[cfg(test)]
mod tests {
    use crate::rules::Rule;
    use crate::rules::test_support::{ACQUIRE, PUBLISH, RELEASE, RENEW, cases};

    cases! { Rule::FenceInDisjunction;
        fence_in_inner_join_on_under_or: "UPDATE r SET Payload = p.Body FROM dbo.ReportPublication r INNER JOIN dbo.Pending p ON p.ReportId = r.ReportId AND r.Generation = @g AND r.LeaseOwner = @o AND r.LeaseUntilUtc > SYSUTCDATETIME() OR p.Force = 1 WHERE r.ReportId = @id" => true;
        article_publish: PUBLISH => false;
        article_acquire: ACQUIRE => false;
        article_release: RELEASE => false;
        article_renew: RENEW => false;
        generation_under_or: "UPDATE dbo.ReportPublication SET Payload = @p WHERE ReportId = @id AND (Generation = @g OR @force = 1) AND LeaseOwner = @o AND LeaseUntilUtc > SYSUTCDATETIME()" => true;
        precedence_trap: "UPDATE dbo.ReportPublication SET Payload = @p WHERE ReportId = @id AND Generation = @g AND LeaseOwner = @o AND LeaseUntilUtc > SYSUTCDATETIME() OR Payload IS NULL" => true;
        under_not: "UPDATE dbo.ReportPublication SET Payload = @p WHERE ReportId = @id AND NOT (Generation = @g) AND LeaseOwner = @o AND LeaseUntilUtc > SYSUTCDATETIME()" => true;
        caller_condition_parenthesised: "UPDATE dbo.ReportPublication SET Payload = @p WHERE (Payload IS NULL OR Payload = '') AND ReportId = @id AND Generation = @g AND LeaseOwner = @o AND LeaseUntilUtc > SYSUTCDATETIME()" => false;
        simply_missing_is_not_disjunction: "UPDATE dbo.ReportPublication SET Payload = @p WHERE ReportId = @id" => false;
    }
}
