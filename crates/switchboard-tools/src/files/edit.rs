//! `edit_file`: exact-text replacements, each of which must match exactly once, applied in
//! order; the answer is a unified diff; with `dryRun` nothing is written.

use similar::TextDiff;

use super::Files;
use super::read::Content;

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
        let diff = TextDiff::from_lines(&original, &edited)
            .unified_diff()
            .context_radius(3)
            .header(given, given)
            .to_string();
        if !dry_run && edited != original {
            self.write(given, &edited)?;
        }
        Ok(diff)
    }
}
