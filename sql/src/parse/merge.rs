//! `MERGE`: its update, delete and insert arms.

use super::{ParamStyle, Parser, SqlError, Statement, StatementKind, UpdateArm, Via};

impl Parser<'_, '_> {
    pub(super) fn merge(&mut self) -> Result<Statement, SqlError> {
        self.pos += 1; // MERGE
        self.skip_top();
        self.eat_word("INTO");
        let target = self
            .table_name()
            .ok_or_else(|| self.error("expected the table after MERGE"))?;
        let alias = self.alias();
        let mut mentioned = vec![target.clone()];
        if !self.eat_word("USING") {
            return Err(self.error("expected USING"));
        }
        let _ = self.table_list(&mut mentioned, &mut Vec::new());
        if !self.eat_word("ON") {
            return Err(self.error("expected ON"));
        }
        let on = self.condition()?;
        let mut updates = Vec::new();
        let mut inserts = Vec::new();
        let mut deletes = false;
        while self.eat_word("WHEN") {
            self.eat_word("NOT");
            if !self.eat_word("MATCHED") {
                return Err(self.error("expected MATCHED"));
            }
            let mut by_source = false;
            if self.eat_word("BY") {
                by_source = self.at_word("SOURCE");
                self.pos += 1;
            }
            let arm_condition = if self.eat_word("AND") {
                Some(self.condition()?)
            } else {
                None
            };
            if !self.eat_word("THEN") {
                return Err(self.error("expected THEN"));
            }
            if self.eat_word("UPDATE") {
                if !self.eat_word("SET") {
                    return Err(self.error("expected SET"));
                }
                let assignments = self.assignments()?;
                let mut conditions = Vec::new();
                if !by_source {
                    conditions.push(on.clone());
                }
                conditions.extend(arm_condition);
                updates.push(UpdateArm {
                    assignments,
                    conditions,
                    where_range: None,
                    implied_equal: Vec::new(),
                });
            } else if self.eat_word("DELETE") {
                deletes = true;
            } else if self.eat_word("INSERT") {
                inserts.push(self.insert_body(false)?);
            } else if self.eat_word("DO") {
                self.eat_word("NOTHING");
            } else {
                return Err(self.error("expected UPDATE, DELETE or INSERT"));
            }
        }
        if self.eat_word("OUTPUT") {
            self.skip_output();
        }
        self.tail();
        let mut names = vec![target.name.clone()];
        names.extend(alias);
        Ok(Statement {
            param_style: ParamStyle::Unknown,
            kind: StatementKind::Merge,
            range: 0..0,
            target: Some(target),
            via: Via::Name,
            alternatives: Vec::new(),
            output_into: None,
            target_names: names,
            updates,
            deletes,
            inserts,
            grant: None,
            mentioned,
        })
    }
}
