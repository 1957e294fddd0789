//! A fenced write in a trait's `impl` without `trait_impl`: the error names the option.

use fenced::{Backend, Lease, Outcome, Store, fenced_write};

pub trait ReportRepository {
    fn save(&self, lease: &Lease, payload: &str)
    -> impl Future<Output = fenced::Result<Outcome>> + Send;
}

pub struct Reports<B> {
    store: Store<B>,
}

impl<B: Backend> ReportRepository for Reports<B> {
    #[fenced_write(
        table = "ReportPublication",
        sql = "UPDATE ReportPublication SET Payload = @payload",
        store = self.store,
    )]
    async fn save(&self, lease: &Lease, payload: &str) -> fenced::Result<Outcome>;
}

fn main() {}
