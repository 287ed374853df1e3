//! Call ids: ULIDs (48-bit millisecond timestamp + 80 random bits, Crockford base32), so ids
//! sort by time in the ledger and in logs, and a client can correlate a result with its row.

use std::time::{SystemTime, UNIX_EPOCH};

const ALPHABET: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/// A new call id for a call starting at `wall`.
pub fn new_call_id(wall: SystemTime) -> String {
    let millis = wall
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
        & ((1 << 48) - 1);
    let random: u128 = rand::random::<u128>() & ((1 << 80) - 1);
    encode((u128::from(millis) << 80) | random)
}

fn encode(mut value: u128) -> String {
    let mut out = [0u8; 26];
    for slot in out.iter_mut().rev() {
        *slot = ALPHABET[(value & 31) as usize];
        value >>= 5;
    }
    out.iter().map(|b| char::from(*b)).collect()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn ids_are_26_characters_and_sort_by_time() {
        let early = new_call_id(UNIX_EPOCH + Duration::from_millis(1_700_000_000_000));
        let late = new_call_id(UNIX_EPOCH + Duration::from_millis(1_700_000_000_001));
        assert_eq!(early.len(), 26);
        assert!(early.chars().all(|c| ALPHABET.contains(&(c as u8))));
        assert!(early < late, "{early} < {late}");
        assert_ne!(
            new_call_id(UNIX_EPOCH),
            new_call_id(UNIX_EPOCH),
            "random part"
        );
        assert_eq!(encode(0), "00000000000000000000000000");
    }
}
