//! Benchmarks of fenced.

fn main() {}
