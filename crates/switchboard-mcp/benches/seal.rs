//! What sealing costs a request: `seal/session` mints a 2025-era session id (an
//! `initialize`), `open/session` opens one on a replica that does not hold it (its first
//! request there), and `open/request_state` opens an approval's `requestState` (the
//! `input_required` retry). A held session is not opened again, so later requests pay none
//! of this.
//!
//! `cargo bench -p switchboard-mcp --bench seal`

use std::time::{Duration, SystemTime};

use criterion::{Criterion, criterion_group, criterion_main};
use switchboard_mcp::seal::{Binding, KeyRing, Purpose, SealKey};

fn ring() -> KeyRing {
    // Three keys, as after two rotations: opening finds the key by id.
    KeyRing::new(vec![
        SealKey::new(1, &[1; 32]),
        SealKey::new(2, &[2; 32]),
        SealKey::new(3, &[3; 32]),
    ])
    .expect("keys")
}

fn sealing(c: &mut Criterion) {
    let ring = ring();
    let now = SystemTime::now();
    let expires = now + Duration::from_secs(86_400);
    let session = Binding {
        purpose: Purpose::Session,
        agent: "qa\u{1f}",
        route: "/mcp/agents/qa",
    };
    let payload =
        br#"{"v":"2025-11-25","c":{"elicitation":{},"roots":{"listChanged":true}},"t":1795679246}"#;
    c.bench_function("seal/session", |b| {
        b.iter(|| ring.seal(&session, expires, payload))
    });
    let id = ring.seal(&session, expires, payload);
    c.bench_function("open/session", |b| {
        b.iter(|| ring.open(&id, &session, now).expect("opens"))
    });
    let call = Binding {
        purpose: Purpose::RequestState,
        agent: "qa",
        route: "tools/call fs__delete 5f2b9c0e4a7d1e3f8b6c2a9d0e1f3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c",
    };
    let state = ring.seal(&call, expires, &[7; 24]);
    c.bench_function("open/request_state", |b| {
        b.iter(|| ring.open(&state, &call, now).expect("opens"))
    });
    println!("session id: {} bytes", id.len());
}

criterion_group!(benches, sealing);
criterion_main!(benches);
