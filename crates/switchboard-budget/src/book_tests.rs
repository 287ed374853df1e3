//! Tests of the book.

use super::*;

#[test]
fn placeholder_book() {
    let book = LatencyBook::default();
    assert!(book.tool("x").is_none());
}
