//! Moods to playlists: each configured path is a file (played as it is) or a directory,
//! which expands to the audio files directly in it (by extension, see [`AUDIO_EXTENSIONS`]),
//! sorted by name. Paths that are missing or unreadable become problems to report, never
//! panics; so do files whose path is not UTF-8, which mpv's JSON IPC (and the tools' JSON
//! answers) cannot name. A mood is playable when at least one track was found.

use std::path::{Path, PathBuf};

/// The file extensions (any case) a mood directory's audio files have.
pub const AUDIO_EXTENSIONS: [&str; 6] = ["mp3", "ogg", "opus", "flac", "wav", "m4a"];

/// A mood's tracks, in play order, and what was wrong with its paths.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Playlist {
    pub tracks: Vec<PathBuf>,
    pub problems: Vec<String>,
}

/// Resolves a mood's configured paths, reading the directories now (so files added since
/// the start are found).
pub fn resolve(paths: &[PathBuf]) -> Playlist {
    let mut playlist = Playlist::default();
    if paths.is_empty() {
        playlist.problems.push("no paths are configured".to_owned());
    }
    for path in paths {
        match std::fs::metadata(path) {
            Ok(meta) if meta.is_dir() => match audio_files(path) {
                Ok(files) if files.is_empty() => playlist.problems.push(format!(
                    "{} holds no audio files ({})",
                    path.display(),
                    AUDIO_EXTENSIONS.join(", ")
                )),
                Ok(files) => files.into_iter().for_each(|file| playlist.add(file)),
                Err(error) => playlist
                    .problems
                    .push(format!("cannot read directory {}: {error}", path.display())),
            },
            Ok(_) => playlist.add(path.clone()),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => playlist
                .problems
                .push(format!("{} does not exist", path.display())),
            Err(error) => playlist
                .problems
                .push(format!("cannot read {}: {error}", path.display())),
        }
    }
    playlist
}

impl Playlist {
    /// Adds a track, or a problem when its path is not UTF-8.
    fn add(&mut self, track: PathBuf) {
        if track.to_str().is_some() {
            self.tracks.push(track);
        } else {
            self.problems.push(format!(
                "{} is skipped: its name is not valid UTF-8, which mpv's JSON IPC cannot carry (rename it)",
                track.to_string_lossy()
            ));
        }
    }
}

/// Whether `path` has one of the [`AUDIO_EXTENSIONS`].
pub fn is_audio(path: &Path) -> bool {
    path.extension()
        .and_then(|extension| extension.to_str())
        .is_some_and(|extension| {
            AUDIO_EXTENSIONS
                .iter()
                .any(|known| known.eq_ignore_ascii_case(extension))
        })
}

/// The audio files directly in `dir` (not in its subdirectories), sorted.
fn audio_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        // `metadata` follows symlinks: a link to an audio file counts, one to a directory not.
        if is_audio(&path) && std::fs::metadata(&path).is_ok_and(|meta| meta.is_file()) {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}
