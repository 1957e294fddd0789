//! `suppression-without-reason` (FL010). Raised by the suppression parser; this file
//! holds its documentation.

pub(crate) const DOC: &str = "\
# suppression-without-reason (FL010)

## What it does
Flags a suppression comment that names a rule but gives no reason after it.

## Why is this bad?
A suppression switches off a safety check for one statement. Without a reason, the next
reader cannot tell a considered exception from a silenced warning, and nobody can review
whether the exception still holds.

## Example
```sql
-- fenced-lint: allow(fenced-row-delete)
DELETE FROM dbo.ReportPublication WHERE ReportId = @reportId;
```

## Use instead
```sql
-- fenced-lint: allow(fenced-row-delete) test fixture teardown, runs on a throwaway database
DELETE FROM dbo.ReportPublication WHERE ReportId = @reportId;
```
";
