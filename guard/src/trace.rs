//! A tracing span for every protocol step: the table, the key, the generation and the
//! outcome as fields, and never a value of the caller's columns.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use tracing::Instrument;
use tracing::field::Empty;
use tracing::instrument::Instrumented;

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
/// `outcome = "error"`.
///
/// A future of its own rather than an `async fn`: an `async fn` keeps `body` as its
/// argument and again inside the span's wrapper, twice the size, and every step's
/// future is moved at least once. A span no subscriber wants (the usual case) is passed
/// by: no entering and leaving it on every poll of `body`.
pub(crate) fn traced<T: Traced, F: Future<Output = Result<T>>>(
    span: tracing::Span,
    body: F,
) -> Step<F> {
    let body = if span.is_disabled() {
        Body::Bare { body }
    } else {
        Body::InSpan {
            body: body.instrument(span.clone()),
        }
    };
    Step { body, span }
}

pin_project_lite::pin_project! {
    /// A step's future in its span: [`traced`].
    pub(crate) struct Step<F> {
        #[pin]
        body: Body<F>,
        span: tracing::Span,
    }
}

pin_project_lite::pin_project! {
    /// A step's body, entered in its span only where a subscriber wants the span.
    #[project = BodyProjection]
    enum Body<F> {
        Bare { #[pin] body: F },
        InSpan { #[pin] body: Instrumented<F> },
    }
}

impl<T: Traced, F: Future<Output = Result<T>>> Future for Step<F> {
    type Output = Result<T>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let result = match this.body.project() {
            BodyProjection::Bare { body } => ready!(body.poll(cx)),
            BodyProjection::InSpan { body } => ready!(body.poll(cx)),
        };
        match &result {
            Ok(value) => value.record(this.span),
            Err(_) => {
                this.span.record("outcome", "error");
            }
        }
        Poll::Ready(result)
    }
}
