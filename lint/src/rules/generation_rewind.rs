//! `generation-rewind` (FL005).

use super::{Context, Finding, Rule};

pub(crate) const DOC: &str = "\
# generation-rewind (FL005)

## What it does
Flags a write that assigns the generation of a fenced table anything other than
`generation + 1`: an `UPDATE` (or update arm) setting it to a parameter, a literal or an
expression; an `INSERT` supplying a generation other than the literal `0` (in `VALUES` or
in the select list of a single plain `SELECT`), or copying it from a query; and `INSERT OR REPLACE` / `REPLACE INTO`, which delete the row and insert it
again with whatever generation the statement gives. Provisioning a row with generation
`0` (or leaving the column to its default) is fine.

## Why is this bad?
The generation orders acquisitions. Setting it back (or to a value a worker chose) lets
an old generation number become current again, so a superseded worker still carrying it
passes the fence. A generation is never reset and never decremented.

## Example
```sql
UPDATE dbo.ReportPublication SET Generation = @generation WHERE ReportId = @reportId;
```

## Use instead
```sql
UPDATE dbo.ReportPublication
SET Generation = Generation + 1, LeaseOwner = @owner,
    LeaseUntilUtc = DATEADD(second, @leaseSeconds, SYSUTCDATETIME())
WHERE ReportId = @reportId
  AND (LeaseUntilUtc IS NULL OR LeaseUntilUtc <= SYSUTCDATETIME());
```
";

pub(crate) fn check(context: &Context<'_>, out: &mut Vec<Finding>) {
    let Some(table) = context.table else { return };
    // Written only for a finding: most statements have none.
    let name = || table.display_name();
    let help = || {
        Some(format!(
            "only ever assign `{0} = {0} + 1`, in the acquisition",
            table.generation
        ))
    };
    if context
        .arms
        .iter()
        .any(|facts| !facts.generation_rewinds.is_empty())
    {
        out.push(context.finding(
            Rule::GenerationRewind,
            format!(
                "the generation of fenced table `{}` is assigned a value other than `{} + 1`",
                name(),
                table.generation
            ),
            help(),
        ));
    }
    for insert in &context.statement.inserts {
        if insert.replace {
            out.push(
                context.finding(
                    Rule::GenerationRewind,
                    format!(
                        "replacing a row of fenced table `{}` deletes it and resets its generation",
                        name()
                    ),
                    Some(
                        "provision rows with a plain INSERT and change them with fenced UPDATEs"
                            .to_owned(),
                    ),
                ),
            );
            continue;
        }
        let Some(index) = insert
            .columns
            .iter()
            .position(|c| c.eq_ignore_ascii_case(&table.generation))
        else {
            continue;
        };
        let bad = match &insert.rows {
            None => true,
            Some(rows) => rows
                .iter()
                .any(|row| row.get(index).is_none_or(|v| v.integer != Some(0))),
        };
        if bad {
            out.push(context.finding(
                Rule::GenerationRewind,
                format!("an INSERT into fenced table `{}` sets the generation to something other than 0", name()),
                Some(format!("provision new rows with `{} = 0` (or its default)", table.generation)),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::rules::Rule;
    use crate::rules::test_support::{ACQUIRE, PROVISION, PUBLISH, RELEASE, RENEW, cases};

    cases! { Rule::GenerationRewind;
        article_publish: PUBLISH => false;
        article_acquire: ACQUIRE => false;
        article_release: RELEASE => false;
        article_renew: RENEW => false;
        article_provision: PROVISION => false;
        provision_without_generation: "INSERT INTO dbo.ReportPublication (ReportId) VALUES (@id)" => false;
        set_to_parameter: "UPDATE dbo.ReportPublication SET Generation = @g WHERE ReportId = @id AND Generation = @old AND LeaseOwner = @o AND LeaseUntilUtc > SYSUTCDATETIME()" => true;
        reset_to_zero: "UPDATE dbo.ReportPublication SET Generation = 0 WHERE ReportId = @id" => true;
        minus_one: "UPDATE dbo.ReportPublication SET Generation = Generation - 1 WHERE ReportId = @id" => true;
        plus_two: "UPDATE dbo.ReportPublication SET Generation = Generation + 2 WHERE ReportId = @id" => true;
        compound_assignment: "UPDATE dbo.ReportPublication SET Generation += 1 WHERE ReportId = @id AND (LeaseUntilUtc IS NULL OR LeaseUntilUtc <= SYSUTCDATETIME())" => true;
        insert_nonzero: "INSERT INTO dbo.ReportPublication (ReportId, Generation) VALUES (@id, @g)" => true;
        insert_select_provision: "INSERT INTO [dbo].[ReportPublication] ([ReportId], [Generation], [PublishedGeneration]) SELECT @P1, 0, 0 WHERE NOT EXISTS (SELECT 1 FROM [dbo].[ReportPublication] WITH (UPDLOCK, HOLDLOCK) WHERE [ReportId] = @P1)" => false;
        insert_select_aliases: "INSERT INTO dbo.ReportPublication (ReportId, Generation) SELECT @id AS ReportId, 0 AS Generation" => false;
        insert_select_union: "INSERT INTO dbo.ReportPublication (ReportId, Generation) SELECT @a, 0 UNION ALL SELECT @b, @g" => true;
        insert_select_star: "INSERT INTO dbo.ReportPublication (ReportId, Generation) SELECT * FROM staging.Reports" => true;
        insert_select: "INSERT INTO dbo.ReportPublication (ReportId, Generation) SELECT ReportId, Generation FROM backup.ReportPublication" => true;
        sqlite_replace: "INSERT OR REPLACE INTO report_publication (report_id, payload) VALUES (?1, ?2)" => true;
        replace_into: "REPLACE INTO report_publication (report_id) VALUES (?1)" => true;
        other_column: "UPDATE dbo.ReportPublication SET PublishedGeneration = @g WHERE ReportId = @id AND Generation = @g AND LeaseOwner = @o AND LeaseUntilUtc > SYSUTCDATETIME()" => false;
    }
}
