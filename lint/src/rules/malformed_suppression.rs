//! `malformed-suppression` (FL013). Raised by the suppression parser; this file holds
//! its documentation.

pub(crate) const DOC: &str = "\
# malformed-suppression (FL013)

## What it does
Flags a comment that starts like a suppression (`fenced-lint:`) but does not parse as
`fenced-lint: allow(RULE) reason`, or names a rule that does not exist.

## Why is this bad?
A mistyped suppression suppresses nothing, and the author believes it does.

## Example
```sql
-- fenced-lint: allow(require-fence) migration backfill
```

## Use instead
```sql
-- fenced-lint: allow(unfenced-write) migration backfill, runs before the service starts
```
";
