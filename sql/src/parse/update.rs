//! `UPDATE`.

use super::{ParamStyle, Parser, SqlError, Statement, StatementKind, UpdateArm};

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
        if self.eat_word("FROM") {
            let from = self.table_list(&mut mentioned, &mut inner_on);
            // `UPDATE alias SET ... FROM schema.table alias`
            if target.schema.is_none() {
                if let Some((table, table_alias)) = from.iter().find(|(_, a)| {
                    a.as_deref()
                        .is_some_and(|a| a.eq_ignore_ascii_case(&target.name))
                }) {
                    names.push(table_alias.clone().unwrap_or_default());
                    target = table.clone();
                    alias = table_alias.clone();
                } else if let Some((table, table_alias)) = from
                    .iter()
                    .find(|(t, _)| t.name.eq_ignore_ascii_case(&target.name))
                {
                    target = table.clone();
                    if let Some(a) = table_alias {
                        names.push(a.clone());
                    }
                }
            }
        }
        let (mut conditions, where_range) = self.where_clause()?;
        conditions.extend(inner_on);
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
