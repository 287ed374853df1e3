//! The font the plots are drawn with: `--font PATH`, or DejaVu Sans where a Linux machine
//! keeps it — Debian's fonts-dejavu-core, other distributions' packages, or the copy inside
//! any matplotlib installation (a Python environment carried to a bare machine often has
//! one). Only the places in [`PLACES`] are looked at; nothing is searched recursively.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

/// Where DejaVu Sans may be, first match first. A `*` stands for any run of characters within
/// one path component; `~` is `$HOME`.
const PLACES: &[&str] = &[
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu-sans-fonts/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/lib/python3*/*-packages/matplotlib/mpl-data/fonts/ttf/DejaVuSans.ttf",
    "/usr/lib64/python3*/*-packages/matplotlib/mpl-data/fonts/ttf/DejaVuSans.ttf",
    "/usr/local/lib/python3*/*-packages/matplotlib/mpl-data/fonts/ttf/DejaVuSans.ttf",
    "/opt/*/.venv/lib/python3*/site-packages/matplotlib/mpl-data/fonts/ttf/DejaVuSans.ttf",
    "/opt/*/venv/lib/python3*/site-packages/matplotlib/mpl-data/fonts/ttf/DejaVuSans.ttf",
    "/opt/*/lib/python3*/site-packages/matplotlib/mpl-data/fonts/ttf/DejaVuSans.ttf",
    "~/.local/lib/python3*/site-packages/matplotlib/mpl-data/fonts/ttf/DejaVuSans.ttf",
];

/// The font's bytes and where they came from: `given`, or the first of [`PLACES`] that is
/// there. Fails, naming `--font`, `--no-plots` and the package, when there is none.
pub fn load(given: Option<&Path>) -> anyhow::Result<(PathBuf, Vec<u8>)> {
    if let Some(path) = given {
        let bytes = std::fs::read(path).with_context(|| {
            format!(
                "--font {}: cannot read it (or leave the plots out: --no-plots)",
                path.display()
            )
        })?;
        return Ok((path.to_owned(), bytes));
    }
    let home = std::env::var("HOME").unwrap_or_default();
    for place in PLACES {
        let pattern = match place.strip_prefix('~') {
            Some(rest) if !home.is_empty() => format!("{home}{rest}"),
            Some(_) => continue,
            None => (*place).to_owned(),
        };
        for path in expand(&pattern) {
            if let Ok(bytes) = std::fs::read(&path) {
                return Ok((path, bytes));
            }
        }
    }
    bail!(
        "no font to draw the plots with: DejaVuSans.ttf is in none of {}. Install Debian's \
         fonts-dejavu-core, point --font at a TrueType font, or leave the plots out with \
         --no-plots",
        PLACES.join(", ")
    )
}

/// The files matching `pattern` (absolute), in name order; a `*` matches any run of
/// characters within one component (one `*` per component).
fn expand(pattern: &str) -> Vec<PathBuf> {
    let mut paths = vec![PathBuf::from("/")];
    for component in pattern.split('/').filter(|c| !c.is_empty()) {
        let mut next = Vec::new();
        for base in &paths {
            match component.split_once('*') {
                Some((prefix, suffix)) => {
                    let Ok(entries) = std::fs::read_dir(base) else {
                        continue;
                    };
                    let mut names: Vec<String> = entries
                        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
                        .filter(|name| matches(name, prefix, suffix))
                        .collect();
                    names.sort();
                    next.extend(names.into_iter().map(|name| base.join(name)));
                }
                None => {
                    let path = base.join(component);
                    if path.exists() {
                        next.push(path);
                    }
                }
            }
        }
        paths = next;
    }
    paths.retain(|path| path.is_file());
    paths
}

/// Whether `name` is `prefix`, anything, `suffix`.
fn matches(name: &str, prefix: &str, suffix: &str) -> bool {
    name.len() >= prefix.len() + suffix.len() && name.starts_with(prefix) && name.ends_with(suffix)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_star_matches_any_run_within_a_component() {
        assert!(matches("python3.12", "python3", ""));
        assert!(matches("python3", "python3", ""));
        assert!(matches("dist-packages", "", "-packages"));
        assert!(!matches("python2.7", "python3", ""));
        // The prefix and the suffix may not overlap.
        assert!(!matches("ab", "ab", "b"));
    }

    #[test]
    fn patterns_find_every_match_in_name_order() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        for venv in ["b", "a", "c"] {
            let fonts = root
                .join(venv)
                .join(".venv/lib/python3.12/site-packages/fonts");
            std::fs::create_dir_all(&fonts).expect("dirs");
            if venv != "c" {
                std::fs::write(fonts.join("DejaVuSans.ttf"), venv).expect("font");
            }
        }
        let pattern = format!(
            "{}/*/.venv/lib/python3*/site-packages/fonts/DejaVuSans.ttf",
            root.display()
        );
        let found: Vec<String> = expand(&pattern)
            .iter()
            .map(|path| std::fs::read_to_string(path).expect("read"))
            .collect();
        assert_eq!(found, ["a", "b"]);
        assert!(expand(&format!("{}/nothing/*/here", root.display())).is_empty());
    }

    #[test]
    fn a_given_font_that_is_not_there_names_the_ways_out() {
        let error = load(Some(Path::new("/nonexistent/font.ttf"))).expect_err("no such font");
        let message = format!("{error:#}");
        assert!(
            message.contains("--font /nonexistent/font.ttf"),
            "{message}"
        );
        assert!(message.contains("--no-plots"), "{message}");
    }
}
