//! Running a prepared SQLite statement with bound values and reading what it returns:
//! the same three steps for the pool's statements, a lent connection's and a caller's.

use rusqlite::{Statement, params_from_iter};

use super::value::{bound, decode};
use crate::value::Value;

/// Runs a prepared statement with `params` and returns the rows it changed.
pub(crate) fn rows_changed(stmt: &mut Statement<'_>, params: &[Value]) -> rusqlite::Result<u64> {
    let rows = stmt.execute(params_from_iter(bound(params)))?;
    Ok(u64::try_from(rows).unwrap_or(u64::MAX))
}

/// Runs a prepared statement with `params` to its end and returns its first row.
pub(crate) fn first_row(
    stmt: &mut Statement<'_>,
    params: &[Value],
) -> rusqlite::Result<Option<Vec<Value>>> {
    let width = stmt.column_count();
    let mut rows = stmt.query(params_from_iter(bound(params)))?;
    let first = rows.next()?.map(|row| values(row, width)).transpose()?;
    // Step to the end so that a RETURNING statement completes its changes.
    while rows.next()?.is_some() {}
    Ok(first)
}

/// Runs a prepared statement with `params` and returns every row.
pub(crate) fn all_rows(
    stmt: &mut Statement<'_>,
    params: &[Value],
) -> rusqlite::Result<Vec<Vec<Value>>> {
    let width = stmt.column_count();
    let mut rows = stmt.query(params_from_iter(bound(params)))?;
    let mut all = Vec::new();
    while let Some(row) = rows.next()? {
        all.push(values(row, width)?);
    }
    Ok(all)
}

/// The first `width` columns of `row`, decoded.
fn values(row: &rusqlite::Row<'_>, width: usize) -> rusqlite::Result<Vec<Value>> {
    (0..width).map(|i| decode(i, row.get_ref(i)?)).collect()
}
