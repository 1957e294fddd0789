//! `fenced-row-delete` (FL007).

use super::{Context, Finding, Rule};
use crate::sql::StatementKind;

pub(crate) const DOC: &str = "\
# fenced-row-delete (FL007)

## What it does
Flags `DELETE` (including `MERGE ... WHEN MATCHED THEN DELETE`) and `TRUNCATE` on a fenced
table.

## Why is this bad?
The generation lives in the row. Deleting the row and provisioning it again restarts the
generation at 0, so generation numbers a superseded worker still holds become valid again.
Release a lease by clearing its owner and expiry; retire a row by marking it, not by
deleting it.

## Example
```sql
DELETE FROM dbo.ReportPublication WHERE ReportId = @reportId;
```

## Use instead
```sql
UPDATE dbo.ReportPublication
SET LeaseOwner = NULL, LeaseUntilUtc = NULL
WHERE ReportId = @reportId AND Generation = @generation AND LeaseOwner = @owner;
```
";

pub(crate) fn check(context: &Context<'_>, out: &mut Vec<Finding>) {
    let Some(table) = context.table else { return };
    if context.statement.deletes && context.statement.kind != StatementKind::Insert {
        out.push(context.finding(
            Rule::FencedRowDelete,
            format!("rows of fenced table `{}` are deleted, which destroys the generation the fence depends on", table.display_name()),
            Some("release leases by clearing the owner and expiry; keep the row and its generation".to_owned()),
        ));
    }
}

#[cfg(test)]
mod tests {
    use crate::rules::Rule;
    use crate::rules::test_support::{ACQUIRE, PUBLISH, RELEASE, RENEW, cases};

    cases! { Rule::FencedRowDelete;
        article_publish: PUBLISH => false;
        article_acquire: ACQUIRE => false;
        article_release: RELEASE => false;
        article_renew: RENEW => false;
        delete_from: "DELETE FROM dbo.ReportPublication WHERE ReportId = @id" => true;
        delete_without_from: "DELETE dbo.ReportPublication WHERE ReportId = @id" => true;
        delete_top: "DELETE TOP (10) FROM [dbo].[ReportPublication]" => true;
        delete_alias: "DELETE r FROM dbo.ReportPublication r JOIN dbo.Other o ON o.Id = r.ReportId" => true;
        postgres_using: "DELETE FROM report_publication p USING other o WHERE o.id = p.report_id RETURNING p.report_id" => true;
        truncate: "TRUNCATE TABLE dbo.ReportPublication" => true;
        merge_delete: "MERGE dbo.ReportPublication t USING src s ON t.ReportId = s.ReportId WHEN MATCHED THEN DELETE;" => true;
        other_table: "DELETE FROM dbo.Other WHERE Id = @id" => false;
        trigger_event_is_not_a_delete: "CREATE TRIGGER trg ON dbo.ReportPublication AFTER INSERT, DELETE AS BEGIN SELECT 1 END" => false;
        foreign_key_action: "ALTER TABLE dbo.Child ADD CONSTRAINT fk FOREIGN KEY (ReportId) REFERENCES dbo.ReportPublication (ReportId) ON DELETE CASCADE" => false;
    }
}
