//! `unused-suppression` (FL011). Raised by the suppression matcher; this file holds its
//! documentation.

pub(crate) const DOC: &str = "\
# unused-suppression (FL011)

## What it does
Flags a suppression comment that suppresses nothing: the statement on the next line
raises no finding of the named rule (or there is no statement).

## Why is this bad?
A stale suppression hides the next problem that appears on that line, and misleads the
reader into thinking the statement below is an exception.

## Example
```sql
-- fenced-lint: allow(unfenced-write) legacy path
UPDATE dbo.ReportPublication SET Payload = @payload
WHERE ReportId = @reportId AND Generation = @generation AND LeaseOwner = @owner
  AND LeaseUntilUtc > SYSUTCDATETIME();
```

## Use instead
Remove the comment.
";
