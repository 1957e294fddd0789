use fenced::{Backend, Executor, Lease, Outcome, Store, fenced_write};

pub trait ReportRepository {
    fn save(
        &self,
        lease: &Lease,
        payload: &str,
        draft: bool,
    ) -> impl Future<Output = fenced::Result<Outcome>> + Send;
}

pub struct Reports<B> {
    store: Store<B>,
}

impl<B: Backend> ReportRepository for Reports<B> {
    #[fenced_write(
        table = "ReportPublication",
        sql = "UPDATE ReportPublication SET Payload = @payload WHERE Draft = @draft",
        store = self.store,
        trait_impl,
    )]
    async fn save(&self, lease: &Lease, payload: &str, draft: bool) -> fenced::Result<Outcome>;
}

fn main() {}
