//! Errors inside the method's SQL literal (`sql = "..."`).

use proc_macro2::Span;
use syn::LitStr;

use crate::statement::Problem;

/// An error inside the SQL literal: at the fragment when the compiler can point into a
/// literal, at the literal otherwise, always naming the fragment and where it is.
pub(crate) fn sql_error(lit: &LitStr, problem: &Problem) -> syn::Error {
    let sql = lit.value();
    let start = problem.range.start.min(sql.len());
    let end = problem.range.end.clamp(start, sql.len());
    let before = &sql[..start];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    let mut fragment: String = sql[start..end].chars().take(60).collect();
    if fragment.len() < end - start {
        fragment.push('…');
    }
    let location = if fragment.is_empty() {
        format!("at line {line}, column {column} of the SQL")
    } else {
        format!("at `{fragment}`, line {line}, column {column} of the SQL")
    };
    let span = subspan(lit, start..end).unwrap_or_else(|| lit.span());
    syn::Error::new(span, format!("{}\n{location}", problem.message))
}

/// A span inside the literal, where the compiler supports it (nightly only) and the
/// literal's text is its value (no escapes).
fn subspan(lit: &LitStr, range: std::ops::Range<usize>) -> Option<Span> {
    let token = lit.token();
    let text = token.to_string();
    let inner = text.strip_prefix('"')?.strip_suffix('"')?;
    if inner != lit.value() {
        return None;
    }
    token.subspan(range.start + 1..range.end + 1)
}
