//! What the ledger's benchmarks share: a typical row.

use serde_json::json;
use switchboard_ledger::LedgerEntry;

/// A typical row of a dice roll, number `i` (its call id).
pub fn entry(i: u64) -> LedgerEntry {
    LedgerEntry {
        call_id: format!("01BENCH{i:019}"),
        started_ms: 1_795_000_000_000 + i as i64,
        agent: Some("npc".into()),
        subject: None,
        client_id: None,
        session: Some("s1".into()),
        tier: Some("fast".into()),
        exposed: "dice__roll".into(),
        server: Some("dice".into()),
        tool: Some("roll".into()),
        args_digest: Some(
            "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08".into(),
        ),
        args_redacted: Some(std::sync::Arc::new(json!({"expression": "4d6kh3"}))),
        outcome: "ok".into(),
        error: None,
        duration_us: 120,
        cost: 0.0,
        approval: None,
        result_bytes: Some(40),
        cached: false,
        trace_id: None,
    }
}
