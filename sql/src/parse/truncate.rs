//! `TRUNCATE`.

use super::{ParamStyle, Parser, SqlError, Statement, StatementKind, Via};
use crate::lex::TokenKind;

impl Parser<'_, '_> {
    pub(super) fn truncate(&mut self) -> Result<Statement, SqlError> {
        self.pos += 1;
        self.eat_word("TABLE");
        self.eat_word("ONLY");
        let target = self
            .table_name()
            .ok_or_else(|| self.error("expected the table after TRUNCATE"))?;
        let mut mentioned = vec![target.clone()];
        while self.at_kind(TokenKind::Comma) {
            self.pos += 1;
            mentioned.extend(self.table_name());
        }
        self.skip_clause();
        Ok(Statement {
            param_style: ParamStyle::Unknown,
            kind: StatementKind::Truncate,
            range: 0..0,
            target_names: vec![target.name.clone()],
            target: Some(target),
            via: Via::Name,
            alternatives: Vec::new(),
            output_into: None,
            updates: Vec::new(),
            deletes: true,
            inserts: Vec::new(),
            grant: None,
            mentioned,
        })
    }
}
