//! A tracing span for every protocol step: the table, the key, the generation and the
//! outcome as fields, and never a value of the caller's columns.

use std::future::Future;

use tracing::Instrument;
use tracing::field::Empty;

use crate::error::Result;
use crate::lease::Lease;
use crate::operation::OperationOutcome;
use crate::outcome::Outcome;
use crate::table::FencedTable;
use crate::value::Key;

/// A step's result, as its span's `outcome` (and for an acquisition, `generation`).
pub(crate) trait Traced {
    fn record(&self, span: &tracing::Span);
}

impl Traced for Outcome {
    fn record(&self, span: &tracing::Span) {
        span.record(
            "outcome",
            if self.is_applied() {
                "applied"
            } else {
                "refused"
            },
        );
    }
}

impl Traced for OperationOutcome {
    fn record(&self, span: &tracing::Span) {
        let outcome = match self {
            OperationOutcome::Applied => "applied",
            OperationOutcome::Refused => "refused",
            OperationOutcome::AlreadyApplied { .. } => "already applied",
        };
        span.record("outcome", outcome);
    }
}

impl Traced for Option<Lease> {
    fn record(&self, span: &tracing::Span) {
        match self {
            Some(lease) => {
                span.record("generation", lease.generation());
                span.record("outcome", "acquired");
            }
            None => {
                span.record("outcome", "held");
            }
        }
    }
}

impl Traced for bool {
    fn record(&self, span: &tracing::Span) {
        span.record("outcome", if *self { "applied" } else { "refused" });
    }
}

impl Traced for () {
    fn record(&self, span: &tracing::Span) {
        span.record("outcome", "applied");
    }
}

/// The span of one step on `key` of `table`, at debug level, named `fenced` with the
/// step as its `step` field.
pub(crate) fn step(
    step: &'static str,
    table: &FencedTable,
    key: &Key,
    generation: Option<i64>,
) -> tracing::Span {
    tracing::debug_span!(
        "fenced",
        step,
        table = %table.name(),
        key = %key,
        generation,
        outcome = Empty,
    )
}

/// Runs `body` in `span` and records its outcome there; an error is recorded as
/// `outcome = "error"`. A span no subscriber wants (the usual case) is passed by: no
/// entering and leaving it on every poll of `body`.
pub(crate) async fn traced<T: Traced>(
    span: tracing::Span,
    body: impl Future<Output = Result<T>>,
) -> Result<T> {
    if span.is_disabled() {
        return body.await;
    }
    let result = body.instrument(span.clone()).await;
    match &result {
        Ok(value) => value.record(&span),
        Err(_) => {
            span.record("outcome", "error");
        }
    }
    result
}
