//! Line diffs: the longest common subsequence of two texts' lines (after trimming their common
//! head and tail), the unified diff shown by `--dry-run`, and the replay of an edit script onto
//! the original lines (how the TOML editor keeps every untouched line byte for byte).

use std::fmt::Write as _;

/// One step of an edit script turning lines `a` into lines `b`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Op {
    /// `a[i]` and `b[j]` are the same line.
    Equal(usize, usize),
    /// `a[i]` is dropped.
    Delete(usize),
    /// `b[j]` is added.
    Insert(usize),
}

/// The largest middle part (lines of `a` × lines of `b`) solved exactly; beyond it, the whole
/// middle is shown as replaced (still a correct diff, only not a minimal one).
const MAX_CELLS: usize = 4_000_000;

/// The lines of `text`, each with its line break (the last one may have none).
pub(super) fn lines(text: &str) -> Vec<&str> {
    text.split_inclusive('\n').collect()
}

/// An edit script from `a` to `b` that keeps a longest common subsequence of lines.
pub(super) fn diff_lines(a: &[&str], b: &[&str]) -> Vec<Op> {
    let head = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let tail = a[head..]
        .iter()
        .rev()
        .zip(b[head..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let (a_mid, b_mid) = (&a[head..a.len() - tail], &b[head..b.len() - tail]);
    let mut ops: Vec<Op> = (0..head).map(|i| Op::Equal(i, i)).collect();
    middle(a_mid, b_mid, head, &mut ops);
    let (a_end, b_end) = (a.len() - tail, b.len() - tail);
    ops.extend((0..tail).map(|k| Op::Equal(a_end + k, b_end + k)));
    ops
}

/// The script of the middle parts, whose indices start at `offset` in both texts.
fn middle(a: &[&str], b: &[&str], offset: usize, ops: &mut Vec<Op>) {
    let (n, m) = (a.len(), b.len());
    if n.saturating_mul(m) > MAX_CELLS {
        ops.extend((0..n).map(|i| Op::Delete(offset + i)));
        ops.extend((0..m).map(|j| Op::Insert(offset + j)));
        return;
    }
    // lcs[i * (m + 1) + j]: the length of the LCS of a[i..] and b[j..].
    let width = m + 1;
    let mut lcs = vec![0u32; (n + 1) * width];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i * width + j] = if a[i] == b[j] {
                lcs[(i + 1) * width + j + 1] + 1
            } else {
                lcs[(i + 1) * width + j].max(lcs[i * width + j + 1])
            };
        }
    }
    let (mut i, mut j) = (0, 0);
    while i < n || j < m {
        if i < n && j < m && a[i] == b[j] {
            ops.push(Op::Equal(offset + i, offset + j));
            i += 1;
            j += 1;
        } else if j >= m || (i < n && lcs[(i + 1) * width + j] >= lcs[i * width + j + 1]) {
            ops.push(Op::Delete(offset + i));
            i += 1;
        } else {
            ops.push(Op::Insert(offset + j));
            j += 1;
        }
    }
}

const CONTEXT: usize = 3;

/// A unified diff of two texts (3 lines of context, `--- a/NAME` / `+++ b/NAME` headers), for
/// `--dry-run`; empty when the texts are the same.
pub fn unified_diff(name: &str, before: &str, after: &str) -> String {
    let (a, b) = (lines(before), lines(after));
    let ops = diff_lines(&a, &b);
    let changed: Vec<usize> = (0..ops.len())
        .filter(|&k| !matches!(ops[k], Op::Equal(..)))
        .collect();
    let Some(&first) = changed.first() else {
        return String::new();
    };
    let mut out = format!("--- a/{name}\n+++ b/{name}\n");
    // Group changes whose unchanged gap is small enough to share context.
    let mut start = first;
    let mut end = first;
    for &k in &changed[1..] {
        if k - end > 2 * CONTEXT {
            hunk(&mut out, &ops, &a, &b, start, end);
            start = k;
        }
        end = k;
    }
    hunk(&mut out, &ops, &a, &b, start, end);
    out
}

/// Writes the hunk of the changes `ops[first..=last]` with their context.
fn hunk(out: &mut String, ops: &[Op], a: &[&str], b: &[&str], first: usize, last: usize) {
    let from = first.saturating_sub(CONTEXT);
    let to = (last + CONTEXT + 1).min(ops.len());
    let part = &ops[from..to];
    // Where the hunk starts in each text: the first line it shows, or the line after which it
    // applies when it shows none of that text.
    let (mut old_at, mut new_at) = (0, 0);
    for op in &ops[..from] {
        match op {
            Op::Equal(..) => {
                old_at += 1;
                new_at += 1;
            }
            Op::Delete(_) => old_at += 1,
            Op::Insert(_) => new_at += 1,
        }
    }
    let old_count = part
        .iter()
        .filter(|op| !matches!(op, Op::Insert(_)))
        .count();
    let new_count = part
        .iter()
        .filter(|op| !matches!(op, Op::Delete(_)))
        .count();
    let _ = writeln!(
        out,
        "@@ -{} +{} @@",
        range(old_at, old_count),
        range(new_at, new_count)
    );
    for op in part {
        let (mark, line) = match *op {
            Op::Equal(i, _) => (' ', a[i]),
            Op::Delete(i) => ('-', a[i]),
            Op::Insert(j) => ('+', b[j]),
        };
        out.push(mark);
        out.push_str(line);
        if !line.ends_with('\n') {
            out.push_str("\n\\ No newline at end of file\n");
        }
    }
}

/// `start,count` of a hunk header (1-based; `,1` left out as diff does).
fn range(at: usize, count: usize) -> String {
    match count {
        0 => format!("{at},0"),
        1 => format!("{}", at + 1),
        _ => format!("{},{count}", at + 1),
    }
}

/// `after` (a re-print of the edited document) as an edit of `original`: the lines the edit
/// kept are copied from `original`, the new ones written with its line break. Only when the
/// re-print of the unedited document is `original` line for line (line breaks aside): a
/// printer that moved lines (dotted keys written apart are printed together) would have
/// lines copied by the wrong index, so then `after` is taken as it is.
pub(super) fn replay(original: &str, before: &str, after: &str) -> String {
    let source = lines(original);
    let (old, new) = (lines(before), lines(after));
    let body = |line: &str| line.trim_end_matches(['\n', '\r']).to_owned();
    if source.len() != old.len() || source.iter().zip(&old).any(|(s, o)| body(s) != body(o)) {
        return after.to_owned();
    }
    let crlf = original
        .find('\n')
        .is_some_and(|n| original[..n].ends_with('\r'));
    let mut out = String::with_capacity(after.len() + 64);
    for op in diff_lines(&old, &new) {
        let line = match op {
            Op::Equal(i, _) => source[i],
            Op::Delete(_) => continue,
            Op::Insert(j) => new[j],
        };
        if !out.is_empty() && !out.ends_with('\n') {
            out.push_str(if crlf { "\r\n" } else { "\n" });
        }
        match (matches!(op, Op::Insert(_)), line.strip_suffix('\n')) {
            (true, Some(body)) if crlf && !body.ends_with('\r') => {
                out.push_str(body);
                out.push_str("\r\n");
            }
            _ => out.push_str(line),
        }
    }
    out
}
