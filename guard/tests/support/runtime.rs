//! Running a test's future on stacks larger than the default 2 MiB.

/// Runs `future` to completion on a thread of its own and a multi-threaded runtime,
/// all with 16 MiB stacks. A debug build of the SQL Server path nests futures whose poll
/// frames are hundreds of kilobytes each (`Work::run` with a publication retry and a
/// TLS login took more than the default 2 MiB), so the tests that drive it run here.
pub fn block_on<F>(future: F) -> F::Output
where
    F: std::future::Future + Send,
    F::Output: Send,
{
    const STACK: usize = 16 << 20;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .thread_stack_size(STACK)
        .enable_all()
        .build()
        .expect("build the test runtime");
    std::thread::scope(|scope| {
        let main = std::thread::Builder::new()
            .stack_size(STACK)
            .spawn_scoped(scope, || runtime.block_on(future))
            .expect("start the test's main thread");
        match main.join() {
            Ok(output) => output,
            Err(panic) => std::panic::resume_unwind(panic),
        }
    })
}
