//! `DELETE`.

use super::{ParamStyle, Parser, SqlError, Statement, StatementKind};

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
        if self.eat_word("FROM") || self.eat_word("USING") {
            // A delete of a fenced row is flagged whatever its conditions.
            let from = self.table_list(&mut mentioned, &mut Vec::new());
            if target.schema.is_none()
                && let Some((table, table_alias)) = from.iter().find(|(_, a)| {
                    a.as_deref()
                        .is_some_and(|a| a.eq_ignore_ascii_case(&target.name))
                })
            {
                names.push(table_alias.clone().unwrap_or_default());
                target = table.clone();
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
            target_names: names,
            updates: Vec::new(),
            deletes: true,
            inserts: Vec::new(),
            grant: None,
            mentioned,
        })
    }
}
