//! `unanalysed-write` (FL009). Raised by the linter when a write mentioning a fenced
//! table cannot be parsed, and here for an `INSERT` into a fenced table whose values
//! are positional.

use super::{Context, Finding, Rule};

pub(crate) const DOC: &str = "\
# unanalysed-write (FL009)

## What it does
Flags a statement that writes (`UPDATE`, `DELETE`, `MERGE`, `INSERT`) and mentions a
fenced table, but that the lint could not analyse: its syntax was not understood, it is
assembled by concatenation at run time, or it is an `INSERT` into a fenced table without
a column list (its values are matched to columns by position, and the lint does not know
the table's column order, so it cannot tell what the generation is given).
`INSERT ... DEFAULT VALUES` gives no values and is fine.

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

/// Flags an `INSERT` into a fenced table without a column list, other than `DEFAULT
/// VALUES`. `INSERT OR REPLACE` and `REPLACE INTO` are left to `generation-rewind`,
/// which flags them whatever their columns.
pub(crate) fn check(context: &Context<'_>, out: &mut Vec<Finding>) {
    let Some(table) = context.table else { return };
    let positional = context.statement.inserts.iter().any(|insert| {
        let default_values = insert
            .rows
            .as_ref()
            .is_some_and(|rows| rows.iter().all(Vec::is_empty));
        !insert.replace && insert.columns.is_empty() && !default_values
    });
    if positional {
        out.push(context.finding(
            Rule::UnanalysedWrite,
            format!(
                "an INSERT into fenced table `{}` without a column list cannot be analysed: its values are matched to columns by position",
                table.display_name()
            ),
            Some(format!(
                "name the columns, and leave `{0}` out or give it 0",
                table.generation
            )),
        ));
    }
}

#[cfg(test)]
mod tests {
    use crate::rules::Rule;
    use crate::rules::test_support::{PROVISION, cases};

    cases! { Rule::UnanalysedWrite;
        article_provision: PROVISION => false;
        named_columns: "INSERT INTO dbo.ReportPublication (ReportId, Generation) VALUES (@id, 0)" => false;
        default_values: "INSERT INTO dbo.ReportPublication DEFAULT VALUES" => false;
        positional_values: "INSERT INTO dbo.ReportPublication VALUES (@id, 0, NULL, NULL, 0, 0, @payload)" => true;
        positional_values_rows: "INSERT INTO report_publication VALUES (?1, 7, NULL, NULL, 0, 0, NULL), (?2, 0, NULL, NULL, 0, 0, NULL)" => true;
        positional_select: "INSERT INTO dbo.ReportPublication SELECT * FROM backup.ReportPublication" => true;
        merge_insert_named: "MERGE dbo.ReportPublication AS t USING (SELECT @id AS ReportId) AS s ON t.ReportId = s.ReportId WHEN NOT MATCHED THEN INSERT (ReportId, Generation) VALUES (s.ReportId, 0);" => false;
        positional_merge_insert: "MERGE dbo.ReportPublication AS t USING (SELECT @id AS ReportId) AS s ON t.ReportId = s.ReportId WHEN NOT MATCHED THEN INSERT VALUES (s.ReportId, 0, NULL, NULL, 0, 0, NULL);" => true;
        replace_is_generation_rewind: "REPLACE INTO report_publication VALUES (?1, 0, NULL, NULL, 0, 0, NULL)" => false;
        other_table: "INSERT INTO dbo.AuditLog VALUES (@id, @what)" => false;
    }
}
