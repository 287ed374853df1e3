//! "Did you mean …?": the known word closest to a misspelled one.
//!
//! Used for unknown keys and unknown built-ins; it only suggests, it never accepts a
//! misspelling in place of the real word.

/// The known word closest to `word`, if one is close enough to be a plausible typo.
pub fn closest<'k>(word: &str, known: &[&'k str]) -> Option<&'k str> {
    known
        .iter()
        .map(|k| (edit_distance(&word.to_lowercase(), &k.to_lowercase()), *k))
        .filter(|(distance, k)| *distance <= 2.max(k.len() / 3))
        .min()
        .map(|(_, k)| k)
}

/// The hint for an unknown word: the closest known one, else the list of known ones.
pub fn hint(word: &str, known: &[&str], list_label: &str) -> String {
    match closest(word, known) {
        Some(k) => format!("did you mean '{k}'?"),
        None => format!("{list_label}: {}", known.join(", ")),
    }
}

/// Levenshtein distance in characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut previous = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let current = row[j + 1];
            row[j + 1] = if ca == *cb {
                previous
            } else {
                1 + previous.min(row[j]).min(current)
            };
            previous = current;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_only_plausible_typos() {
        let known = ["command", "args", "call_timeout", "url"];
        let cases = [
            ("comand", Some("command")),
            ("arg", Some("args")),
            ("calltimeout", Some("call_timeout")),
            ("URL", Some("url")),
            ("banana", None),
        ];
        for (word, expected) in cases {
            assert_eq!(closest(word, &known), expected, "{word}");
        }
        assert_eq!(hint("zzz", &["a", "b"], "known keys"), "known keys: a, b");
    }
}
