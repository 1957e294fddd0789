//! `UPDATE`.

use super::tables::{same_ignoring_case, sql_server_only};
use super::{ParamStyle, Parser, SqlError, Statement, StatementKind, UpdateArm, Via};
use crate::{Dialect, Reading};

impl Parser<'_, '_> {
    pub(super) fn update(&mut self) -> Result<Statement, SqlError> {
        self.pos += 1; // UPDATE
        if self.eat_word("OR") {
            self.pos += 1; // SQLite conflict resolution
        }
        self.skip_top();
        self.eat_word("ONLY");
        let mut target = self
            .table_name()
            .ok_or_else(|| self.error("expected the table after UPDATE"))?;
        let mut alias = self.alias();
        if !self.eat_word("SET") {
            return Err(self.error("expected SET"));
        }
        let assignments = self.assignments()?;
        let mut mentioned = vec![target.clone()];
        let mut names = vec![target.name.clone()];
        if self.eat_word("OUTPUT") {
            self.skip_output();
        }
        let mut inner_on = Vec::new();
        let mut via = Via::Name;
        let mut alternatives = Vec::new();
        let mut through_derived = None;
        if self.eat_word("FROM") {
            let from = self.table_list(&mut mentioned, &mut inner_on);
            if let Some(item) = self.aliased(&target, &from) {
                // SQL Server: `UPDATE alias SET ... FROM schema.table alias` writes the
                // table (through a derived table, the table it selects from).
                names.push(item.alias.clone().unwrap_or_default());
                let written_as = std::mem::replace(&mut target, item.table.clone());
                via = match item.derived {
                    Some((open, close)) => {
                        through_derived = self.derived_conditions(open, close);
                        Via::DerivedTable(written_as.range.clone())
                    }
                    None => Via::Alias(written_as.range.clone()),
                };
                alias = item.alias.clone();
                if self.reading == Reading::Tolerant && !sql_server_only(&target) {
                    alternatives.push(written_as);
                }
            } else if target.schema.is_none()
                && self.reading.follows(Dialect::Mssql)
                && let Some(item) = from.iter().find(|item| {
                    item.derived.is_none() && same_ignoring_case(&item.table.name, &target.name)
                })
            {
                // `UPDATE t SET ... FROM schema.t`: the same table, by its full name.
                target = item.table.clone();
                if let Some(a) = &item.alias {
                    names.push(a.clone());
                }
            }
        }
        let (mut conditions, where_range) = self.where_clause()?;
        conditions.extend(inner_on);
        // A derived table's condition restricts the rows written as a WHERE would.
        conditions.extend(through_derived.into_iter().flatten());
        self.tail();
        if let Some(alias) = alias {
            names.push(alias);
        }
        names.push(target.name.clone());
        Ok(Statement {
            param_style: ParamStyle::Unknown,
            kind: StatementKind::Update,
            range: 0..0,
            target: Some(target),
            via,
            alternatives,
            output_into: None,
            target_names: names,
            updates: vec![UpdateArm {
                assignments,
                conditions,
                where_range,
                implied_equal: Vec::new(),
            }],
            deletes: false,
            inserts: Vec::new(),
            grant: None,
            mentioned,
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::lex::{lex, lex_as};
    use crate::parse::{Via, find_statements, parse_found_in};
    use crate::{Dialect, Reading, Statement};

    /// The statement `sql` is, as `reading` reads it.
    fn read(reading: Reading, sql: &str) -> Statement {
        let tokens = match reading {
            Reading::Dialect(d) => lex_as(d, sql).unwrap().tokens,
            Reading::Tolerant => lex(sql).tokens,
        };
        let found = &find_statements(sql, &tokens)[0];
        parse_found_in(reading, sql, &tokens, found).unwrap()
    }

    fn target(reading: Reading, sql: &str) -> (String, Via, Vec<String>) {
        let statement = read(reading, sql);
        let name = |t: &crate::TableName| match &t.schema {
            Some(schema) => format!("{schema}.{}", t.name),
            None => t.name.clone(),
        };
        (
            statement.target.as_ref().map(name).unwrap_or_default(),
            statement.via,
            statement.alternatives.iter().map(name).collect(),
        )
    }

    /// SQL Server updates the table an alias names; PostgreSQL and SQLite update the
    /// table the name after `UPDATE` is; the tolerant reading takes SQL Server's and
    /// keeps the others' as an alternative, so the lint misses neither.
    #[test]
    fn an_alias_makes_the_target_on_sql_server_only() {
        let sql = "UPDATE \"Report\" SET a = 1 FROM line AS Report WHERE 1 = 1";
        let postgres = target(Dialect::Postgres.into(), sql);
        assert_eq!(postgres, ("Report".into(), Via::Name, vec![]));
        assert_eq!(target(Dialect::Sqlite.into(), sql), postgres);
        let (written, via, alternatives) = target(Dialect::Mssql.into(), sql);
        assert_eq!(written, "line");
        assert!(matches!(via, Via::Alias(r) if &sql[r.clone()] == "\"Report\""));
        assert!(alternatives.is_empty());
        let (written, via, alternatives) = target(Reading::Tolerant, sql);
        assert_eq!(
            (written.as_str(), alternatives),
            ("line", vec!["Report".to_owned()])
        );
        assert!(matches!(via, Via::Alias(_)));
        // A table variable or temporary table makes the statement SQL Server's alone.
        let tsql = "UPDATE t SET b = 0 FROM @tv AS t";
        assert_eq!(target(Reading::Tolerant, tsql).2, Vec::<String>::new());
        let tsql = "UPDATE t SET b = 0 FROM #work AS t";
        assert_eq!(target(Reading::Tolerant, tsql).2, Vec::<String>::new());
        // The control: a name that no alias of the FROM list has is the table itself.
        let plain = "UPDATE r SET a = 1 FROM line AS l WHERE l.id = r.id";
        for reading in [
            Reading::Tolerant,
            Dialect::Mssql.into(),
            Dialect::Postgres.into(),
        ] {
            assert_eq!(
                target(reading, plain),
                ("r".into(), Via::Name, vec![]),
                "{reading:?}"
            );
        }
        // SQL Server's `UPDATE t ... FROM dbo.t`: the same table, by its full name.
        let qualified = "UPDATE t SET a = 1 FROM dbo.t JOIN u ON u.id = t.id";
        assert_eq!(target(Dialect::Mssql.into(), qualified).0, "dbo.t");
        assert_eq!(target(Dialect::Postgres.into(), qualified).0, "t");
    }

    /// An alias inside a parenthesised join is the `FROM` list's as any other: SQL
    /// Server writes the table it names.
    #[test]
    fn an_alias_inside_a_parenthesised_join_makes_the_target_on_sql_server() {
        let sql =
            "UPDATE p SET a = 1 FROM (dbo.Report AS p JOIN line AS l ON 1 = 1) WHERE l.id = 2";
        let (written, via, _) = target(Dialect::Mssql.into(), sql);
        assert_eq!(written, "dbo.Report");
        assert!(matches!(via, Via::Alias(r) if &sql[r.clone()] == "p"));
        assert_eq!(
            target(Dialect::Postgres.into(), sql),
            ("p".into(), Via::Name, vec![])
        );
        assert_eq!(target(Reading::Tolerant, sql).2, ["p"]);
        let nested = "UPDATE p SET a = 1 FROM line AS l JOIN ((o CROSS JOIN Report p) \
                      JOIN u ON 1 = 1) ON 1 = 1";
        assert_eq!(target(Dialect::Mssql.into(), nested).0, "Report");
        // A derived table in parentheses is still one, and a subquery is no join.
        let derived = "UPDATE d SET a = 1 FROM ((SELECT * FROM Report) AS d JOIN l ON 1 = 1)";
        let (written, via, _) = target(Dialect::Mssql.into(), derived);
        assert_eq!(written, "Report");
        assert!(matches!(via, Via::DerivedTable(_)));
        let union = "UPDATE u SET a = 1 FROM ((SELECT 1 AS a) UNION (SELECT 2)) AS q";
        assert_eq!(target(Dialect::Mssql.into(), union).0, "u");
    }

    #[test]
    fn a_derived_table_is_written_through_on_sql_server() {
        let sql = "UPDATE r SET a = 1 FROM (SELECT * FROM dbo.Report WHERE Generation = 3) AS r";
        let (written, via, _) = target(Dialect::Mssql.into(), sql);
        assert_eq!(written, "dbo.Report");
        assert!(matches!(via, Via::DerivedTable(r) if &sql[r.clone()] == "r"));
        assert_eq!(
            target(Dialect::Postgres.into(), sql),
            ("r".into(), Via::Name, vec![])
        );
        let (written, _, alternatives) = target(Reading::Tolerant, sql);
        assert_eq!(
            (written.as_str(), alternatives),
            ("dbo.Report", vec!["r".to_owned()])
        );
        // Its condition restricts the rows written, as a CTE's does.
        let conditions = &read(Reading::Tolerant, sql).updates[0].conditions;
        assert_eq!(conditions.len(), 1, "{conditions:?}");
    }

    #[test]
    fn a_common_table_expression_is_written_through_on_sql_server() {
        let sql = "WITH c AS (SELECT * FROM dbo.Report) UPDATE c SET a = 1";
        let (written, via, _) = target(Dialect::Mssql.into(), sql);
        assert_eq!(written, "dbo.Report");
        assert!(matches!(via, Via::Cte(r) if &sql[r.clone()] == "c"));
        for d in [Dialect::Postgres, Dialect::Sqlite] {
            assert_eq!(
                target(d.into(), sql),
                ("c".into(), Via::Name, vec![]),
                "{d}"
            );
        }
        assert_eq!(target(Reading::Tolerant, sql).2, ["c"]);
    }

    #[test]
    fn names_are_read_as_the_database_reads_them() {
        let escaped = "UPDATE U&\"\\0052eport\" SET a = 1";
        assert_eq!(target(Dialect::Postgres.into(), escaped).0, "Report");
        assert_eq!(target(Reading::Tolerant, escaped).0, "Report");
        let custom = "UPDATE U&\"!0052eport\" UESCAPE '!' SET a = 1";
        assert_eq!(target(Dialect::Postgres.into(), custom).0, "Report");
        let doubled = "UPDATE [Re]]port] SET a = 1";
        assert_eq!(target(Dialect::Mssql.into(), doubled).0, "Re]port");
        let output = read(
            Dialect::Mssql.into(),
            "UPDATE t SET a = 1 OUTPUT inserted.a INTO dbo.audit (a) WHERE b = 2",
        );
        assert_eq!(output.output_into.map(|t| t.name), Some("audit".to_owned()));
    }
}
