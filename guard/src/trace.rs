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
/// step as its `step` field; [`heard`].
pub(crate) fn step(
    step: &'static str,
    table: &FencedTable,
    key: &Key,
    generation: Option<i64>,
) -> tracing::Span {
    heard(|| {
        tracing::debug_span!(
            "fenced",
            step,
            table = %table.name(),
            key = %key,
            generation,
            outcome = Empty,
        )
    })
}

/// The debug span `make` makes, or [`Span::none`](tracing::Span::none) where no one
/// takes it: no subscriber wants it, and `log` takes no debug records.
///
/// With tracing's `log` feature on (sqlx and tiberius turn it on), a span no subscriber
/// wants still offers its fields, its outcome and its close to `log`, which drops them;
/// on every step of a SQLite transaction that cost about 1,000 instructions of 42,000.
pub(crate) fn heard(make: impl FnOnce() -> tracing::Span) -> tracing::Span {
    if !subscriber_may_want() && !log_takes_debug() {
        return tracing::Span::none();
    }
    let span = make();
    if span.is_disabled() && !log_takes_debug() {
        return tracing::Span::none();
    }
    span
}

/// Whether the subscribers' level admits a debug span: the test `debug_span!` makes
/// first.
fn subscriber_may_want() -> bool {
    use tracing::level_filters::{LevelFilter, STATIC_MAX_LEVEL};
    tracing::Level::DEBUG <= STATIC_MAX_LEVEL && tracing::Level::DEBUG <= LevelFilter::current()
}

/// Whether `log` takes debug records, where tracing forwards a span no subscriber
/// wants (its `log` feature). Such a span's close is a trace record, so where this is
/// false `log` takes none of its records.
fn log_takes_debug() -> bool {
    log::max_level() >= log::LevelFilter::Debug
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
        if this.span.is_none() {
            return Poll::Ready(result);
        }
        match &result {
            Ok(value) => value.record(this.span),
            Err(_) => {
                this.span.record("outcome", "error");
            }
        }
        Poll::Ready(result)
    }
}

#[cfg(test)]
mod tests {
    use tracing::span::{Attributes, Id, Record};
    use tracing::{Event, Metadata, Subscriber};

    use super::*;

    /// A subscriber that wants every span.
    struct Wanting;

    impl Subscriber for Wanting {
        fn enabled(&self, _: &Metadata<'_>) -> bool {
            true
        }
        fn new_span(&self, _: &Attributes<'_>) -> Id {
            Id::from_u64(1)
        }
        fn record(&self, _: &Id, _: &Record<'_>) {}
        fn record_follows_from(&self, _: &Id, _: &Id) {}
        fn event(&self, _: &Event<'_>) {}
        fn enter(&self, _: &Id) {}
        fn exit(&self, _: &Id) {}
    }

    /// A step no one takes is no span at all. Where `log` takes debug records, the span
    /// is tracing's own (kept for `log` where tracing's `log` feature is on, as with
    /// sqlx or tiberius in the build); where a subscriber wants it, a span it sees (the
    /// negative control: `step` can make one). One test, in this order: `log`'s level
    /// and the subscribers' are the process's.
    #[test]
    fn a_step_no_one_takes_is_no_span() {
        let table = FencedTable::builder().build().unwrap();
        let key = Key::from(7_i64);
        let made = || step("update", &table, &key, Some(1));

        assert!(!log_takes_debug() && !subscriber_may_want());
        assert!(made().is_none());

        log::set_max_level(log::LevelFilter::Debug);
        let (for_log, tracings_own) = (made(), tracing::debug_span!("fenced"));
        log::set_max_level(log::LevelFilter::Off);
        assert_eq!(for_log.is_none(), tracings_own.is_none());
        assert!(for_log.is_disabled());

        let dispatch = tracing::Dispatch::new(Wanting);
        let wanted = tracing::dispatcher::with_default(&dispatch, made);
        assert!(!wanted.is_disabled());
    }
}
