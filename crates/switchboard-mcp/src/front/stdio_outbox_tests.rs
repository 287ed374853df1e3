//! The owed answers' claims: owed in the order read, a cancelled one keeping its place, and
//! the bounds on what waits for room.

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::*;

/// Lets every task that can run, run.
async fn settle() {
    for _ in 0..16 {
        tokio::task::yield_now().await;
    }
}

/// Waits for `claim` on a task of its own, saying `name` once it is owed; the task returns
/// the `Owed`, so the test decides when it is paid.
fn owed_in_task(
    claim: Claim,
    cancel: CancellationToken,
    name: &'static str,
    said: &mpsc::UnboundedSender<&'static str>,
) -> tokio::task::JoinHandle<Option<Owed>> {
    let said = said.clone();
    tokio::spawn(async move {
        let owed = claim.owed(&cancel).await;
        if owed.is_some() {
            let _ = said.send(name);
        }
        owed
    })
}

#[tokio::test]
async fn waiting_claims_are_owed_in_the_order_read_and_a_cancelled_one_keeps_its_place() {
    let (outbox, _writer) = Outbox::new(1);
    let mut claims = outbox.claims();
    let Ok(Claim::Owed(first)) = claims.claim(10) else {
        panic!("the bound has room for one");
    };
    let (said, mut heard) = mpsc::unbounded_channel();
    let cancel_b = CancellationToken::new();
    let mut waiting = Vec::new();
    for (name, cancel) in [
        ("a", CancellationToken::new()),
        ("b", cancel_b.clone()),
        ("c", CancellationToken::new()),
    ] {
        let claim = claims.claim(10).expect("room to wait");
        assert!(matches!(claim, Claim::Waiting { .. }), "{name} waits");
        waiting.push(owed_in_task(claim, cancel, name, &said));
    }
    let mut waiting = waiting.into_iter();
    let (a, b, c) = (waiting.next(), waiting.next(), waiting.next());
    let (Some(a), Some(b), Some(c)) = (a, b, c) else {
        panic!("three tasks");
    };
    cancel_b.cancel();
    settle().await;
    assert!(
        heard.try_recv().is_err(),
        "nothing is owed while the bound is full"
    );
    assert!(!b.is_finished(), "b keeps its place behind a");

    drop(first);
    let owed_a = a.await.expect("joined");
    assert_eq!(
        heard.recv().await,
        Some("a"),
        "the first read is owed first"
    );
    assert!(
        b.await.expect("joined").is_none(),
        "b, cancelled, is never owed"
    );
    settle().await;
    assert!(heard.try_recv().is_err(), "c waits for room a holds");
    assert!(
        claims
            .claim(10)
            .is_ok_and(|claim| matches!(claim, Claim::Waiting { .. })),
        "a claim read now waits behind c, though the order's head was owed"
    );

    drop(owed_a);
    let owed_c = c.await.expect("joined");
    assert_eq!(heard.recv().await, Some("c"));
    drop(owed_c);
}

#[tokio::test]
async fn past_the_most_waiting_a_request_is_refused_with_its_id() {
    let (outbox, _writer) = Outbox::new(1);
    let mut claims = outbox.claims();
    let _first = claims.claim(10).expect("owed");
    let waiting: Vec<_> = (0..MAX_WAITING_REQUESTS)
        .map(|n| {
            claims
                .claim(10)
                .unwrap_or_else(|_| panic!("request {n} may wait"))
        })
        .collect();
    let Err(refused) = claims.claim(10) else {
        panic!("one too many waits");
    };
    let Message::Error { id, error } = refused.answer(RequestId::Number(7)) else {
        panic!("an error answers a refused request");
    };
    assert_eq!(id, Some(RequestId::Number(7)));
    assert_eq!(error.code, code::TOO_MANY_REQUESTS_WAITING);
    assert!(error.message.contains("(1)"), "{}", error.message);
    assert_eq!(error.data, Some(json!({ "owedAnswers": 1 })));
    drop(waiting);
    settle().await;

    // Bytes: one request alone waits whatever its size; a second past the bytes is refused.
    let (outbox, _writer) = Outbox::new(1);
    let mut claims = outbox.claims();
    let _first = claims.claim(10).expect("owed");
    let _large = claims
        .claim(2 * MAX_WAITING_BYTES)
        .expect("a request alone waits however large");
    assert!(
        claims.claim(1).is_err(),
        "behind it, the bytes that may wait are spent"
    );
}
