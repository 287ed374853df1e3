//! Real servers for tests, each in its own temporary directory, stopped when dropped.
//! Test-only (`publish = false`): never a dependency of a shipped crate.

pub mod redis;
