//! `edit_file`: exact-text replacements, each of which must match exactly once, applied in
//! order; the answer is a unified diff; with `dryRun` nothing is written.
//!
//! The diff is bounded like every answer of the files tools: computed within
//! [`DIFF_TIME`] (past it, `similar` gives a coarser diff that is still correct, rather than
//! spending minutes on two large, very different texts), and cut at `max_read_bytes`, at a
//! line's end, saying so (the file itself is written whole).

use std::time::Duration;

use similar::TextDiff;

use super::Files;
use super::read::Content;

/// The longest a diff is searched for before a coarser one is taken.
pub(crate) const DIFF_TIME: Duration = Duration::from_secs(1);

/// One replacement.
pub struct Edit {
    pub old: String,
    pub new: String,
}

impl Files {
    /// Applies `edits` to `given`; returns the unified diff.
    pub(super) fn edit(
        &self,
        given: &str,
        edits: &[Edit],
        dry_run: bool,
    ) -> Result<String, String> {
        let original = match self.read(given)? {
            Content::Text(text) => text,
            Content::Binary { .. } => return Err(format!("'{given}' is not a text file")),
        };
        let mut edited = original.clone();
        for (index, edit) in edits.iter().enumerate() {
            if edit.old.is_empty() {
                return Err(format!("edits[{index}].oldText is empty"));
            }
            match edited.matches(edit.old.as_str()).count() {
                0 => return Err(format!("edits[{index}].oldText was not found in '{given}'")),
                1 => edited = edited.replacen(edit.old.as_str(), &edit.new, 1),
                n => {
                    return Err(format!(
                        "edits[{index}].oldText occurs {n} times in '{given}'; include more context so it matches once"
                    ));
                }
            }
        }
        let diff = TextDiff::configure()
            .timeout(DIFF_TIME)
            .diff_lines(&original, &edited)
            .unified_diff()
            .context_radius(3)
            .header(given, given)
            .to_string();
        if !dry_run && edited != original {
            self.write(given, &edited)?;
        }
        Ok(cut(
            diff,
            usize::try_from(self.max_read_bytes).unwrap_or(usize::MAX),
        ))
    }
}

/// `diff` whole if it has at most `limit` bytes, else its lines that fit and a line saying
/// how much was left out.
fn cut(mut diff: String, limit: usize) -> String {
    if diff.len() <= limit {
        return diff;
    }
    let total = diff.len();
    let kept = diff[..diff.floor_char_boundary(limit)]
        .rfind('\n')
        .map_or(0, |end| end + 1);
    diff.truncate(kept);
    diff.push_str(&format!(
        "… {} of the diff's {total} bytes left out (max_read_bytes = {limit})\n",
        total - kept
    ));
    diff
}
