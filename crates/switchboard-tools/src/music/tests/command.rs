//! The command player with real commands: `sleep` standing in for a player that ignores the
//! path, and `cp` showing the `{path}` substitution.

use std::path::Path;
use std::sync::Arc;

use serde_json::json;

use super::{call, eventually, gone, moods, sine};
use crate::music::Music;
use crate::music::command::{CommandPlayer, arguments};

fn argv(words: &[&str]) -> Vec<String> {
    words.iter().map(|word| (*word).to_owned()).collect()
}

fn cmdline(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/cmdline"))
        .unwrap_or_default()
        .replace('\0', " ")
}

#[test]
fn every_path_placeholder_is_replaced_without_a_shell() {
    let track = Path::new("/music/it's a \"song\".ogg");
    let words = arguments(
        &argv(&["{path}", "--file={path}", "-v", "{path}{path}"]),
        track,
    );
    assert_eq!(
        words,
        [
            "/music/it's a \"song\".ogg".into(),
            "--file=/music/it's a \"song\".ogg".into(),
            std::ffi::OsString::from("-v"),
            "/music/it's a \"song\".ogg/music/it's a \"song\".ogg".into(),
        ]
    );
}

#[tokio::test]
async fn a_command_player_starts_per_play_and_is_killed_on_play_stop_and_drop() {
    let dir = tempfile::tempdir().expect("tempdir");
    let track = dir.path().join("wind.wav");
    sine(&track, 1, 440);
    let player = Arc::new(CommandPlayer::new(argv(&["sleep", "30"])));
    let music =
        Music::with_player(moods(&[("wind", vec![track.clone()])]), player.clone()).expect("music");

    let playing = call(&music, "play_track", json!({"mood": "wind"}))
        .await
        .expect("play");
    assert_eq!(playing["backend"], "command");
    assert_eq!(playing["track"], json!(track));
    let first = player.pid().await.expect("pid");
    // Until it execs, the child still shows the test's command line.
    eventually("the child to run sleep", || {
        cmdline(first).trim() == "sleep 30"
    })
    .await;

    call(&music, "play_track", json!({"mood": "wind"}))
        .await
        .expect("play again");
    let second = player.pid().await.expect("pid");
    assert_ne!(second, first);
    assert!(gone(first), "a new play kills the previous command");
    assert!(!gone(second));

    let stopped = call(&music, "stop_music", json!({})).await.expect("stop");
    assert_eq!(
        stopped,
        json!({"stopped": true, "mood": "wind", "track": track, "backend": "command"})
    );
    assert!(gone(second), "stop kills the command");
    assert_eq!(player.pid().await, None);

    call(&music, "play_track", json!({"mood": "wind"}))
        .await
        .expect("play");
    let third = player.pid().await.expect("pid");
    drop(music);
    drop(player);
    eventually("the command to be killed with the provider", || gone(third)).await;
}

#[tokio::test]
async fn the_track_path_is_substituted_and_a_finished_playlist_is_not_playing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let track = dir.path().join("drums.wav");
    sine(&track, 1, 440);
    let copy = dir.path().join("played.wav");
    let player = Arc::new(CommandPlayer::new(argv(&[
        "cp",
        "{path}",
        copy.to_str().expect("utf-8"),
    ])));
    let music = Music::with_player(moods(&[("drums", vec![track.clone()])]), player.clone())
        .expect("music");
    call(&music, "play_track", json!({"mood": "drums"}))
        .await
        .expect("play");
    eventually("cp to copy the track", || {
        std::fs::read(&copy).ok() == std::fs::read(&track).ok()
    })
    .await;
    // A playlist that plays through in under a second does not loop: nothing plays now.
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(5);
    while player.pid().await.is_some() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the loop did not end"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let stopped = call(&music, "stop_music", json!({})).await.expect("stop");
    assert_eq!(stopped["stopped"], false, "{stopped}");
}
