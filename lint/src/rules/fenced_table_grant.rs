//! `fenced-table-grant` (FL008).

use super::{Context, Finding, Rule};

pub(crate) const DOC: &str = "\
# fenced-table-grant (FL008)

## What it does
Flags `GRANT` of `UPDATE`, `INSERT`, `DELETE`, `ALL` or `CONTROL` on a fenced table,
and on whatever contains one: its schema (`ON SCHEMA::dbo`, `ON ALL TABLES IN SCHEMA
public`) or the whole database (T-SQL `GRANT UPDATE TO ...`, `ON DATABASE::...`).

## Why is this bad?
Fencing is only as strong as the weakest write path. A principal allowed to write the
table directly can run any unfenced statement: repair scripts, ad-hoc fixes, a second
code path. The strong deployment grants `EXECUTE` on procedures that carry the fence and
nothing else on the table.

## Example
```sql
GRANT SELECT, UPDATE ON dbo.ReportPublication TO ReportService;
```

## Use instead
```sql
GRANT SELECT ON dbo.ReportPublication TO ReportService;
GRANT EXECUTE ON dbo.PublishReport TO ReportService;
```
";

const WRITE_PRIVILEGES: &[&str] = &[
    "UPDATE", "INSERT", "DELETE", "ALL", "CONTROL", "MERGE", "TRUNCATE",
];

pub(crate) fn check(context: &Context<'_>, out: &mut Vec<Finding>) {
    let Some(grant) = &context.statement.grant else {
        return;
    };
    let granted: Vec<&str> = grant
        .privileges
        .iter()
        .map(String::as_str)
        .filter(|p| WRITE_PRIVILEGES.contains(p))
        .collect();
    if granted.is_empty() {
        return;
    }
    let mut push = |table: &crate::config::TableSpec, scope: String| {
        out.push(Finding {
            rule: Rule::FencedTableGrant,
            range: context.statement.range.clone(),
            table: Some(table.display_name()),
            message: format!(
                "{} granted on {scope} lets its holder write fenced table `{}` without the fence",
                granted.join(", "),
                table.display_name()
            ),
            help: Some(
                "grant EXECUTE on procedures that carry the fence instead of write permissions on the table"
                    .to_owned(),
            ),
        });
    };
    for object in &grant.objects {
        if let Some(table) = context
            .tables
            .iter()
            .find(|t| t.matches(object.schema.as_deref(), &object.name))
        {
            push(table, format!("table `{}`", table.display_name()));
        }
    }
    // Schema-wide and database-wide grants cover the fenced tables in them. A table
    // configured without a schema may be in any.
    for schema in &grant.schemas {
        for table in context.tables {
            if table
                .schema
                .as_deref()
                .is_none_or(|s| s.eq_ignore_ascii_case(schema))
            {
                push(table, format!("schema `{schema}`"));
            }
        }
    }
    if grant.database {
        for table in context.tables {
            push(table, "the whole database".to_owned());
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::rules::Rule;
    use crate::rules::test_support::cases;

    cases! { Rule::FencedTableGrant;
        update: "GRANT SELECT, UPDATE ON dbo.ReportPublication TO ReportService" => true;
        object_class: "GRANT INSERT ON OBJECT::[dbo].[ReportPublication] TO [svc];" => true;
        column_update: "GRANT UPDATE (Payload) ON dbo.ReportPublication TO svc" => true;
        postgres_all: "GRANT ALL PRIVILEGES ON TABLE report_publication TO app" => true;
        control: "GRANT CONTROL ON dbo.ReportPublication TO svc" => true;
        select_only: "GRANT SELECT ON dbo.ReportPublication TO svc" => false;
        execute_procedure: "GRANT EXECUTE ON dbo.PublishReport TO svc" => false;
        other_table: "GRANT UPDATE ON dbo.Other TO svc" => false;
        schema_grant: "GRANT UPDATE ON SCHEMA::dbo TO svc" => true;
        other_schema_grant: "GRANT UPDATE ON SCHEMA::audit TO svc" => true;
        select_on_schema: "GRANT SELECT ON SCHEMA::dbo TO svc" => false;
        postgres_all_tables: "GRANT INSERT, UPDATE ON ALL TABLES IN SCHEMA public TO app" => true;
        database_wide: "GRANT UPDATE TO svc" => true;
        database_class: "GRANT CONTROL ON DATABASE::Reports TO svc" => true;
        role_membership: "GRANT app_reader TO alice" => false;
        sequence: "GRANT UPDATE ON SEQUENCE report_seq TO app" => false;
    }
}
