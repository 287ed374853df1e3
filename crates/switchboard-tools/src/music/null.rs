//! The `null` player: plays nothing and remembers what it was asked to play, for tests and
//! machines without a player. It answers exactly like a real one (backend `null`).

use std::path::PathBuf;
use std::sync::Mutex;

use futures::future::BoxFuture;

use super::player::{Player, Started};

/// One request the null player received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Request {
    Play(Vec<PathBuf>),
    Stop,
}

#[derive(Default)]
struct State {
    playing: Option<PathBuf>,
    history: Vec<Request>,
}

/// Records plays and stops.
#[derive(Default)]
pub(crate) struct NullPlayer {
    state: Mutex<State>,
}

impl NullPlayer {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        match self.state.lock() {
            Ok(state) => state,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// Every play and stop so far, oldest first.
    #[cfg(test)]
    pub(crate) fn history(&self) -> Vec<Request> {
        self.state().history.clone()
    }
}

impl Player for NullPlayer {
    fn backend(&self) -> &'static str {
        "null"
    }

    fn play<'a>(&'a self, tracks: &'a [PathBuf]) -> BoxFuture<'a, Result<Started, String>> {
        Box::pin(async move {
            let track = tracks
                .first()
                .cloned()
                .ok_or_else(|| "the playlist is empty".to_owned())?;
            let mut state = self.state();
            state.playing = Some(track.clone());
            state.history.push(Request::Play(tracks.to_vec()));
            Ok(Started {
                track,
                playlist_length: tracks.len(),
            })
        })
    }

    fn stop(&self) -> BoxFuture<'_, Result<Option<PathBuf>, String>> {
        Box::pin(async move {
            let mut state = self.state();
            state.history.push(Request::Stop);
            Ok(state.playing.take())
        })
    }
}
