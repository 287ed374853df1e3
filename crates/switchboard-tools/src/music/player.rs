//! The seam between the music tools and what makes the sound: a [`Player`] takes a playlist
//! and answers as soon as its first track has been handed over (the playing itself goes on
//! in the background), and stops on request. Implementations: [`super::mpv`] (mpv over its
//! JSON IPC socket), [`super::command`] (a command line per track), [`super::null`] (plays
//! nothing, remembers what it would have played).

use std::path::PathBuf;

use futures::future::BoxFuture;

/// What a player started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Started {
    /// The track playing now: the playlist's first.
    pub track: PathBuf,
    /// How many tracks the player holds (it loops over them).
    pub playlist_length: usize,
}

/// Something that plays playlists.
pub(crate) trait Player: Send + Sync {
    /// The backend's name in answers: `mpv`, `command` or `null`.
    fn backend(&self) -> &'static str;

    /// Replaces whatever plays with `tracks` (not empty), in this order, looping; answers
    /// once the first track is under way. The error is a sentence for the model.
    fn play<'a>(&'a self, tracks: &'a [PathBuf]) -> BoxFuture<'a, Result<Started, String>>;

    /// Stops playing; answers the track that was playing, if one was.
    fn stop(&self) -> BoxFuture<'_, Result<Option<PathBuf>, String>>;
}
