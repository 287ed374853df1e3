//! fixtures
fn main() {}
