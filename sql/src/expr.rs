//! Conditions and value expressions, as far as the fence rules need them.

use std::ops::Range;

/// A column reference: `col`, `alias.col`, `schema.table.col`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnRef {
    /// The part before the last dot (the table or alias), if any.
    pub qualifier: Option<String>,
    /// The column name, unquoted.
    pub name: String,
    /// Byte range in the statement's text.
    pub range: Range<usize>,
}

/// A table reference as written: schema (when qualified) and name, unquoted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableName {
    /// The schema, when the reference is qualified (for three-part names, the middle).
    pub schema: Option<String>,
    /// The table name.
    pub name: String,
    /// Byte range of the whole reference.
    pub range: Range<usize>,
}

/// A value expression: whatever sits on one side of a comparison or of an assignment.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Operand {
    /// Byte range in the text.
    pub range: Range<usize>,
    /// Column references outside subqueries.
    pub columns: Vec<ColumnRef>,
    /// Contains a call to, or keyword for, the database clock.
    pub clock: bool,
    /// Contains a parameter or variable (`@x`, `$1`, `?`, `:x`).
    pub parameter: bool,
    /// Contains a subquery.
    pub subquery: bool,
    /// The tables its subqueries read (`FROM`, `JOIN`...): `(SELECT Epoch FROM
    /// FencedEpoch WHERE Id = 1)` reads `FencedEpoch`.
    pub subquery_tables: Vec<TableName>,
    /// Is exactly `NULL`.
    pub null: bool,
    /// Is exactly an integer literal; its value.
    pub integer: Option<i64>,
    /// Is `<column> + 1` or `1 + <column>`; the column.
    pub increment_of: Option<ColumnRef>,
}

impl Operand {
    /// The operand is exactly one column reference.
    pub fn single_column(&self) -> Option<&ColumnRef> {
        match self.columns.as_slice() {
            [only] if only.range == self.range => Some(only),
            _ => None,
        }
    }
}

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompareOp {
    /// `=`
    Eq,
    /// `<>`, `!=`
    NotEq,
    /// `<`
    Lt,
    /// `<=`
    LtEq,
    /// `>`
    Gt,
    /// `>=`
    GtEq,
}

impl CompareOp {
    /// The operator with its sides swapped: `a < b` is `b > a`.
    pub fn flipped(self) -> CompareOp {
        match self {
            CompareOp::Lt => CompareOp::Gt,
            CompareOp::LtEq => CompareOp::GtEq,
            CompareOp::Gt => CompareOp::Lt,
            CompareOp::GtEq => CompareOp::LtEq,
            other => other,
        }
    }
}

/// A boolean condition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Predicate {
    /// Conjunction; parenthesised nested conjunctions are flattened into it.
    And(Vec<Predicate>),
    /// Disjunction.
    Or(Vec<Predicate>),
    /// Negation.
    Not(Box<Predicate>),
    /// `left op right`.
    Compare {
        /// Left side.
        left: Operand,
        /// Operator.
        op: CompareOp,
        /// Right side.
        right: Operand,
    },
    /// `operand IS [NOT] NULL`.
    IsNull {
        /// The tested value.
        operand: Operand,
        /// `IS NOT NULL`.
        negated: bool,
    },
    /// Anything else (`IN`, `LIKE`, `EXISTS`, `BETWEEN`, a bare boolean...).
    Other {
        /// Columns it mentions.
        operands: Vec<Operand>,
    },
}

impl Predicate {
    /// The top-level conjuncts: the predicates that each must hold for the row to match.
    pub fn conjuncts(&self) -> Vec<&Predicate> {
        match self {
            Predicate::And(items) => items.iter().flat_map(Predicate::conjuncts).collect(),
            other => vec![other],
        }
    }

    /// Every comparison or null test anywhere in the tree, each with whether it sits
    /// under an `OR` or `NOT`.
    pub fn leaves(&self) -> Vec<(&Predicate, bool)> {
        let mut out = Vec::new();
        self.collect_leaves(false, &mut out);
        out
    }

    fn collect_leaves<'a>(&'a self, guarded: bool, out: &mut Vec<(&'a Predicate, bool)>) {
        match self {
            Predicate::And(items) => items.iter().for_each(|p| p.collect_leaves(guarded, out)),
            Predicate::Or(items) => items.iter().for_each(|p| p.collect_leaves(true, out)),
            Predicate::Not(inner) => inner.collect_leaves(true, out),
            leaf => out.push((leaf, guarded)),
        }
    }
}
