//! The tests a claim's filter makes of a column: what the caller builds a
//! [`Candidates`](crate::Candidates) filter from, and what the claim's statement
//! ([`crate::dialect::batch::claim`]) renders. Apart from the claim, which runs that
//! statement, so that the statement's text needs nothing of the claim.

/// A comparison of one of the table's declared columns with a value, in a claim's
/// filter ([`Candidates::filter`](crate::Candidates::filter)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Comparison {
    /// `column = value`
    Eq,
    /// `column <> value`
    Ne,
    /// `column < value`
    Lt,
    /// `column <= value`
    Le,
    /// `column > value`
    Gt,
    /// `column >= value`
    Ge,
}

impl Comparison {
    /// The SQL operator, the same in every dialect.
    pub fn operator(self) -> &'static str {
        match self {
            Comparison::Eq => "=",
            Comparison::Ne => "<>",
            Comparison::Lt => "<",
            Comparison::Le => "<=",
            Comparison::Gt => ">",
            Comparison::Ge => ">=",
        }
    }
}

/// One test of a column in a claim's filter, as [`batch::claim`](crate::dialect::batch::claim) renders it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Test {
    /// `column <operator> <parameter>`
    Compare(Comparison),
    /// `column IS NULL`
    IsNull,
    /// `column IS NOT NULL`
    IsNotNull,
}
