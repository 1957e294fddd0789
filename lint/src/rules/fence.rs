//! What an update arm does to, and requires of, the fence columns of its table: the
//! facts every fence rule reads.

use std::ops::Range;

use crate::config::TableSpec;
use crate::sql::{ColumnRef, CompareOp, Operand, Predicate, Statement, UpdateArm};

/// Where a required predicate was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Presence {
    /// In the top-level `AND` chain: it constrains the write.
    Required,
    /// Only under `OR` or `NOT`: it does not.
    OnlyGuarded,
    /// Nowhere.
    Absent,
}

impl Presence {
    fn add(self, guarded: bool) -> Presence {
        match (self, guarded) {
            (Presence::Required, _) | (_, false) => Presence::Required,
            _ => Presence::OnlyGuarded,
        }
    }
}

/// What the update does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Operation {
    /// Increments the generation: takes the lease.
    Acquire,
    /// Only clears the owner and/or expiry.
    Release,
    /// Sets the expiry (not to `NULL`) without touching the generation.
    Renew,
    /// Anything else.
    Write,
}

/// The facts about one update arm.
#[derive(Debug, Clone)]
pub(crate) struct ArmFacts {
    pub(crate) operation: Operation,
    pub(crate) key: Presence,
    pub(crate) generation: Presence,
    pub(crate) owner: Presence,
    /// `expiry > <database clock>`.
    pub(crate) unexpired: Presence,
    /// `epoch = (<subquery reading the epoch table>)`; always absent for a table without
    /// an epoch column.
    pub(crate) epoch: Presence,
    /// `expiry IS NULL OR expiry <= <clock>` (or one of its parts) as a top-level conjunct.
    pub(crate) lease_free: bool,
    /// Ranges of comparisons of the expiry with something other than the database clock.
    pub(crate) client_clock: Vec<Range<usize>>,
    /// Ranges of generation assignments other than `generation + 1`.
    pub(crate) generation_rewinds: Vec<Range<usize>>,
    /// Whether the arm has any condition at all.
    pub(crate) has_condition: bool,
}

/// Whether a column reference denotes `column` of the statement's target.
pub(crate) fn is_target_column(statement: &Statement, column: &ColumnRef, name: &str) -> bool {
    column.name.eq_ignore_ascii_case(name) && is_target_ref(statement, column)
}

fn is_target_ref(statement: &Statement, column: &ColumnRef) -> bool {
    match &column.qualifier {
        None => true,
        Some(q) => statement
            .target_names
            .iter()
            .any(|n| n.eq_ignore_ascii_case(q)),
    }
}

/// An operand that mentions no fence column of the target: a value, from the row's point
/// of view.
///
/// Other unqualified names count as values: in PL/pgSQL and T-SQL bodies they are as
/// often variables and parameters (`WHERE report_id = p_report`) as columns, and a row
/// compared with another of its own non-fence columns is not a pattern worth a false
/// alarm on every function body.
fn is_value(statement: &Statement, table: &TableSpec, operand: &Operand) -> bool {
    let fence = [&table.key, &table.generation, &table.owner, &table.expiry];
    !operand.range.is_empty()
        && !operand.columns.iter().any(|c| {
            is_target_ref(statement, c) && fence.iter().any(|f| c.name.eq_ignore_ascii_case(f))
        })
}

/// `column op value`, normalised so that the target column is on the left.
fn comparison<'a>(
    statement: &Statement,
    table: &TableSpec,
    predicate: &'a Predicate,
) -> Option<(&'a ColumnRef, CompareOp, &'a Operand)> {
    let Predicate::Compare { left, op, right } = predicate else {
        return None;
    };
    if let Some(column) = left.single_column().filter(|c| is_target_ref(statement, c))
        && is_value(statement, table, right)
    {
        return Some((column, *op, right));
    }
    if let Some(column) = right
        .single_column()
        .filter(|c| is_target_ref(statement, c))
        && is_value(statement, table, left)
    {
        return Some((column, op.flipped(), left));
    }
    None
}

fn is_free_leaf(statement: &Statement, table: &TableSpec, predicate: &Predicate) -> bool {
    if let Predicate::IsNull {
        operand,
        negated: false,
    } = predicate
    {
        return operand.single_column().is_some_and(|c| {
            is_target_column(statement, c, &table.expiry)
                || is_target_column(statement, c, &table.owner)
        });
    }
    comparison(statement, table, predicate).is_some_and(|(column, op, _)| {
        column.name.eq_ignore_ascii_case(&table.expiry)
            && matches!(op, CompareOp::Lt | CompareOp::LtEq)
    })
}

/// Computes the facts of one update arm of `statement` on `table`.
pub(crate) fn facts(statement: &Statement, table: &TableSpec, arm: &UpdateArm) -> ArmFacts {
    let mut generation_rewinds = Vec::new();
    let mut increments = false;
    let mut sets_expiry = false;
    let mut only_clears = !arm.assignments.is_empty();
    for assignment in &arm.assignments {
        let column = &assignment.column;
        if column.eq_ignore_ascii_case(&table.generation) {
            let increment = assignment
                .value
                .increment_of
                .as_ref()
                .is_some_and(|c| is_target_column(statement, c, &table.generation));
            if increment {
                increments = true;
            } else {
                generation_rewinds.push(assignment.column_range.start..assignment.value.range.end);
            }
            only_clears = false;
        } else if column.eq_ignore_ascii_case(&table.expiry) {
            if assignment.value.null {
                continue;
            }
            sets_expiry = true;
            only_clears = false;
        } else if column.eq_ignore_ascii_case(&table.owner) && assignment.value.null {
            continue;
        } else {
            only_clears = false;
        }
    }
    let operation = if increments {
        Operation::Acquire
    } else if only_clears {
        Operation::Release
    } else if sets_expiry && generation_rewinds.is_empty() {
        Operation::Renew
    } else {
        Operation::Write
    };

    let mut key = Presence::Absent;
    let mut generation = Presence::Absent;
    let mut owner = Presence::Absent;
    let mut unexpired = Presence::Absent;
    let mut epoch = Presence::Absent;
    let mut client_clock = Vec::new();
    let mut lease_free = false;
    if arm
        .implied_equal
        .iter()
        .any(|c| c.eq_ignore_ascii_case(&table.key))
    {
        key = Presence::Required;
    }
    for condition in &arm.conditions {
        for (leaf, guarded) in condition.leaves() {
            let Some((column, op, value)) = comparison(statement, table, leaf) else {
                continue;
            };
            let name = &column.name;
            if op == CompareOp::Eq {
                if name.eq_ignore_ascii_case(&table.key) {
                    key = key.add(guarded);
                } else if name.eq_ignore_ascii_case(&table.generation) {
                    generation = generation.add(guarded);
                } else if name.eq_ignore_ascii_case(&table.owner) {
                    owner = owner.add(guarded);
                } else if table
                    .epoch
                    .as_deref()
                    .is_some_and(|e| name.eq_ignore_ascii_case(e))
                    && reads_current_epoch(table, value)
                {
                    epoch = epoch.add(guarded);
                }
            }
            if name.eq_ignore_ascii_case(&table.expiry)
                && op != CompareOp::Eq
                && op != CompareOp::NotEq
            {
                if value.clock {
                    if matches!(op, CompareOp::Gt | CompareOp::GtEq) {
                        unexpired = unexpired.add(guarded);
                    }
                } else {
                    let Predicate::Compare { left, right, .. } = leaf else {
                        continue;
                    };
                    client_clock.push(
                        left.range.start.min(right.range.start)
                            ..left.range.end.max(right.range.end),
                    );
                }
            }
        }
        for conjunct in condition.conjuncts() {
            let free = |p: &Predicate| {
                is_free_leaf(statement, table, p) || client_free(statement, table, p)
            };
            lease_free |= match conjunct {
                // `expiry IS NULL OR expiry <= clock`, possibly with other conditions on
                // the row's state (`OR LeaseEpoch <> <current epoch>` after a restore).
                // A branch that looks at no column of the row (`OR @force = 1`) lets
                // any caller take the lease, so it does not count.
                Predicate::Or(items) => {
                    items.iter().any(free)
                        && items.iter().all(|p| free(p) || mentions_row(statement, p))
                }
                leaf => free(leaf),
            };
        }
    }
    ArmFacts {
        operation,
        key,
        generation,
        owner,
        unexpired,
        epoch,
        lease_free,
        client_clock,
        generation_rewinds,
        has_condition: !arm.conditions.is_empty() || !arm.implied_equal.is_empty(),
    }
}

/// Whether a value is the database's current epoch: it reads the epoch table in a
/// subquery, and takes nothing from the application (a parameter or variable outside
/// the subquery) that could stand in for it.
fn reads_current_epoch(table: &TableSpec, value: &Operand) -> bool {
    !value.parameter
        && value
            .subquery_tables
            .iter()
            .any(|t| table.matches_epoch_table(t.schema.as_deref(), &t.name))
}

/// Whether a condition looks at the row: some column of the target appears in it.
fn mentions_row(statement: &Statement, predicate: &Predicate) -> bool {
    let operands: Vec<&Operand> = match predicate {
        Predicate::Compare { left, right, .. } => vec![left, right],
        Predicate::IsNull { operand, .. } => vec![operand],
        Predicate::Other { operands } => operands.iter().collect(),
        Predicate::And(items) | Predicate::Or(items) => {
            return items.iter().all(|p| mentions_row(statement, p));
        }
        Predicate::Not(inner) => return mentions_row(statement, inner),
    };
    operands
        .iter()
        .any(|o| o.columns.iter().any(|c| is_target_ref(statement, c)))
}

/// `expiry <= @now`: an is-free test against the client's clock (reported by
/// `client-clock-expiry`, and counted as present for `unchecked-acquire`).
fn client_free(statement: &Statement, table: &TableSpec, predicate: &Predicate) -> bool {
    comparison(statement, table, predicate).is_some_and(|(column, op, value)| {
        column.name.eq_ignore_ascii_case(&table.expiry)
            && matches!(op, CompareOp::Lt | CompareOp::LtEq)
            && !value.clock
    })
}
