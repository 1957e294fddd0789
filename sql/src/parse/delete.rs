//! `DELETE`.

use super::tables::sql_server_only;
use super::{ParamStyle, Parser, SqlError, Statement, StatementKind, Via};
use crate::Reading;

impl Parser<'_, '_> {
    pub(super) fn delete(&mut self) -> Result<Statement, SqlError> {
        self.pos += 1; // DELETE
        self.skip_top();
        self.eat_word("FROM");
        self.eat_word("ONLY");
        let mut target = self
            .table_name()
            .ok_or_else(|| self.error("expected the table after DELETE"))?;
        let alias = self.alias();
        let mut mentioned = vec![target.clone()];
        let mut names = vec![target.name.clone()];
        if self.eat_word("OUTPUT") {
            self.skip_output();
        }
        let mut via = Via::Name;
        let mut alternatives = Vec::new();
        // SQL Server's second `FROM` (`DELETE a FROM t AS a`) can make an alias the
        // target; PostgreSQL's `USING` never does.
        let second_from = self.eat_word("FROM");
        if second_from || self.eat_word("USING") {
            // A delete of a fenced row is flagged whatever its conditions.
            let from = self.table_list(&mut mentioned, &mut Vec::new());
            if second_from && let Some(item) = self.aliased(&target, &from) {
                names.push(item.alias.clone().unwrap_or_default());
                let written_as = std::mem::replace(&mut target, item.table.clone());
                via = match item.derived {
                    Some(_) => Via::DerivedTable(written_as.range.clone()),
                    None => Via::Alias(written_as.range.clone()),
                };
                if self.reading == Reading::Tolerant && !sql_server_only(&target) {
                    alternatives.push(written_as);
                }
            }
        }
        let _ = self.where_clause();
        self.tail();
        names.extend(alias);
        Ok(Statement {
            param_style: ParamStyle::Unknown,
            kind: StatementKind::Delete,
            range: 0..0,
            target: Some(target),
            via,
            alternatives,
            output_into: None,
            target_names: names,
            updates: Vec::new(),
            deletes: true,
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
    use crate::{Dialect, Reading};

    fn target(reading: Reading, sql: &str) -> (String, bool) {
        let tokens = match reading {
            Reading::Dialect(d) => lex_as(d, sql).unwrap().tokens,
            Reading::Tolerant => lex(sql).tokens,
        };
        let found = &find_statements(sql, &tokens)[0];
        let statement = parse_found_in(reading, sql, &tokens, found).unwrap();
        (
            statement.target.map(|t| t.name).unwrap_or_default(),
            statement.via != Via::Name,
        )
    }

    /// SQL Server's second `FROM` resolves an alias; PostgreSQL's `USING` never does, in
    /// any reading.
    #[test]
    fn only_sql_servers_second_from_resolves_an_alias() {
        let tsql = "DELETE r FROM dbo.Report AS r WHERE r.id = 1";
        assert_eq!(target(Dialect::Mssql.into(), tsql), ("Report".into(), true));
        assert_eq!(target(Reading::Tolerant, tsql), ("Report".into(), true));
        let joined = "DELETE r FROM (dbo.Report AS r JOIN line AS l ON 1 = 1)";
        assert_eq!(
            target(Dialect::Mssql.into(), joined),
            ("Report".into(), true)
        );
        let using = "DELETE FROM \"Report\" USING line AS Report WHERE 1 = 1";
        for reading in [Reading::Tolerant, Dialect::Postgres.into()] {
            assert_eq!(
                target(reading, using),
                ("Report".into(), false),
                "{reading:?}"
            );
        }
    }
}
