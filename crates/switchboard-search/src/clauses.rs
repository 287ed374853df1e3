//! Splits a task into clauses: the steps a multi-step request is made of. Splits at sentence
//! ends (a `.`, `!` or `?` followed by space), at `;`, `,`, newlines, CJK sentence punctuation,
//! and before the words "and" and "then". Dots inside paths, URLs and numbers do not split.

/// The clauses of `text`, trimmed, empty ones dropped.
pub fn clauses(text: &str) -> Vec<&str> {
    let mut clauses = Vec::new();
    let mut start = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        let next = chars.peek().map(|(_, next)| *next);
        let boundary = match c {
            ';' | ',' | '\n' | '。' | '！' | '？' | '；' | '，' => true,
            '.' | '!' | '?' => next.is_none_or(char::is_whitespace),
            _ => c.is_whitespace() && starts_conjunction(&text[at + c.len_utf8()..]),
        };
        if boundary {
            push(&mut clauses, &text[start..at]);
            start = at + c.len_utf8();
        }
    }
    push(&mut clauses, &text[start..]);
    clauses
}

fn starts_conjunction(rest: &str) -> bool {
    ["and ", "then ", "And ", "Then "]
        .iter()
        .any(|word| rest.starts_with(word))
}

fn push<'a>(clauses: &mut Vec<&'a str>, clause: &'a str) {
    let clause = clause.trim();
    if !clause.is_empty() {
        clauses.push(clause);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_steps_but_not_paths_or_numbers() {
        assert_eq!(
            clauses("Read /root/a.xlsx, plot it as a chart and save it to /root/b.png. Done!"),
            [
                "Read /root/a.xlsx",
                "plot it as a chart",
                "and save it to /root/b.png",
                "Done"
            ]
        );
        assert_eq!(
            clauses("version 2.13.4 then stop"),
            ["version 2.13.4", "then stop"]
        );
        assert!(clauses(" ,;. ").is_empty());
    }
}
