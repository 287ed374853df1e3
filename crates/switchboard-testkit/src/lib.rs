//! Real servers for tests, each in its own temporary directory, stopped when dropped:
//! PostgreSQL and Redis on unix sockets; and certificates for TLS tests (`certs`). Test-only (`publish = false`): never a dependency of
//! a shipped crate.

pub mod certs;
pub mod postgres;
pub mod redis;
