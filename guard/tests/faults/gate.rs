//! A gate that a driver outside the history workload holds the workers at: all of them
//! at once, until no call is in flight ([`Gate::quiesce`]), or chosen ones for as long
//! as it likes ([`Gate::hold`]), as a process paused in the middle of its work would be;
//! and the end of the run ([`Gate::finish`]). Every worker passes it before each call
//! ([`Gate::pass`]) and keeps what that returns until the call has returned.
//!
//! It also tells the driver which lease each worker is working under, between the
//! acquisition and the publication ([`Gate::at_work`]), and keeps the run's clock, so
//! that the driver's instants and the workers' calls are on one timescale.

use std::collections::{HashMap, HashSet};
use std::pin::pin;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use tokio::sync::{Notify, RwLock, RwLockReadGuard, RwLockWriteGuard};
use uuid::Uuid;

/// A lease a worker works under, from its acquisition to its publication.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AtWork {
    pub row: i64,
    pub generation: i64,
    pub owner: Uuid,
}

#[derive(Debug)]
pub struct Gate {
    origin: Instant,
    calls: RwLock<()>,
    held: Mutex<HashSet<usize>>,
    released: Notify,
    at_work: Mutex<HashMap<usize, AtWork>>,
    finished: AtomicBool,
}

impl Default for Gate {
    fn default() -> Self {
        Gate {
            origin: Instant::now(),
            calls: RwLock::new(()),
            held: Mutex::new(HashSet::new()),
            released: Notify::new(),
            at_work: Mutex::new(HashMap::new()),
            finished: AtomicBool::new(false),
        }
    }
}

impl Gate {
    /// The instant the run's clock counts from.
    pub fn origin(&self) -> Instant {
        self.origin
    }

    /// Microseconds since [`origin`](Gate::origin).
    pub fn micros(&self) -> u64 {
        u64::try_from(self.origin.elapsed().as_micros()).unwrap_or(u64::MAX)
    }

    /// Waits until `worker` may make a call: it is not held and the gate is not
    /// quiesced. Keep the guard until the call has returned.
    pub async fn pass(&self, worker: usize) -> RwLockReadGuard<'_, ()> {
        loop {
            let mut released = pin!(self.released.notified());
            // Registered before the check, so that a release in between is not missed.
            released.as_mut().enable();
            if !self.is_held(worker) {
                let guard = self.calls.read().await;
                if !self.is_held(worker) {
                    return guard;
                }
                continue;
            }
            released.await;
        }
    }

    /// Waits until no call is in flight, and lets none start while the guard lives.
    pub async fn quiesce(&self) -> RwLockWriteGuard<'_, ()> {
        self.calls.write().await
    }

    /// Holds `worker` before its next call, until [`release_all`](Gate::release_all).
    pub fn hold(&self, worker: usize) {
        self.held.lock().unwrap().insert(worker);
    }

    /// Lets every held worker go on.
    pub fn release_all(&self) {
        self.held.lock().unwrap().clear();
        self.released.notify_waiters();
    }

    fn is_held(&self, worker: usize) -> bool {
        self.held.lock().unwrap().contains(&worker)
    }

    /// Records the lease `worker` works under now (`None`: none, or it is publishing).
    pub fn set_at_work(&self, worker: usize, lease: Option<AtWork>) {
        let mut at_work = self.at_work.lock().unwrap();
        match lease {
            Some(lease) => at_work.insert(worker, lease),
            None => at_work.remove(&worker),
        };
    }

    /// The workers at work under a lease, by worker index.
    pub fn at_work(&self) -> Vec<(usize, AtWork)> {
        let mut all: Vec<_> = self
            .at_work
            .lock()
            .unwrap()
            .iter()
            .map(|(w, l)| (*w, *l))
            .collect();
        all.sort_by_key(|(w, _)| *w);
        all
    }

    /// Ends the run: workers stop at their next turn.
    pub fn finish(&self) {
        self.finished.store(true, Ordering::SeqCst);
        self.release_all();
    }

    pub fn is_finished(&self) -> bool {
        self.finished.load(Ordering::SeqCst)
    }
}
