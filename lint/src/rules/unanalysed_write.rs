//! `unanalysed-write` (FL009). Raised by the linter when a write mentioning a fenced
//! table cannot be parsed; this file holds its documentation.

pub(crate) const DOC: &str = "\
# unanalysed-write (FL009)

## What it does
Flags a statement that writes (`UPDATE`, `DELETE`, `MERGE`, `INSERT`) and mentions a
fenced table, but that the lint could not analyse: its syntax was not understood.

## Why is this bad?
A lint that skips what it cannot read passes exactly the statements nobody checked. The
statement may well be fenced; the lint cannot tell, so it says so instead of staying
silent.

## Example
```sql
UPDATE dbo.ReportPublication SET WHERE ReportId = @reportId;
```

## Use instead
Write the statement in a form the lint understands (plain `UPDATE ... SET ... WHERE`), or,
when it is correct and the lint is wrong, suppress it with a reason:
```sql
-- fenced-lint: allow(unanalysed-write) dynamic SQL built and fenced by dbo.FencedExec
UPDATE dbo.ReportPublication SET Payload = @payload WHERE ReportId = @reportId ...
```
";
