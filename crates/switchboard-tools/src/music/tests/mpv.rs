//! The mpv player with real mpv (`--ao=null`) and real audio files: what it plays is read
//! back over mpv's IPC socket on a connection of the test's own.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;

use super::{call, eventually, gone, moods, require, sine};
use crate::music::mpv::MpvPlayer;
use crate::music::{Music, MusicSettings, PlayerChoice};

/// Asks mpv for a property on a fresh connection: its value, or mpv's error.
async fn property(socket: &Path, name: &str) -> Result<Value, String> {
    let stream = UnixStream::connect(socket).await.expect("connect to mpv");
    let (reader, mut writer) = stream.into_split();
    let request = json!({"command": ["get_property", name], "request_id": 7}).to_string() + "\n";
    writer.write_all(request.as_bytes()).await.expect("write");
    let mut lines = BufReader::new(reader).lines();
    loop {
        let line = tokio::time::timeout(Duration::from_secs(2), lines.next_line())
            .await
            .expect("mpv answers")
            .expect("read")
            .expect("a line");
        let answer: Value = serde_json::from_str(&line).expect("json");
        if answer["request_id"] == 7 {
            return match answer["error"].as_str() {
                Some("success") => Ok(answer["data"].clone()),
                other => Err(other.unwrap_or("no status").to_owned()),
            };
        }
    }
}

/// Polls a property until it has `expected` (mpv loads files asynchronously).
async fn wait_for(socket: &Path, name: &str, expected: Result<Value, String>) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let value = property(socket, name).await;
        if value == expected {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "mpv's {name} stayed {value:?}, expected {expected:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn mpv_plays_a_mood_reports_it_over_ipc_and_stops_to_idle() {
    let mpv = require("mpv");
    let dir = tempfile::tempdir().expect("tempdir");
    let tavern = dir.path().join("tavern");
    std::fs::create_dir(&tavern).expect("mkdir");
    sine(&tavern.join("a.wav"), 3, 440);
    sine(&tavern.join("b.wav"), 3, 330);
    let battle = dir.path().join("battle.wav");
    sine(&battle, 3, 880);
    let player = Arc::new(MpvPlayer::new(mpv, vec!["--ao=null".to_owned()]));
    let music = Music::with_player(
        moods(&[
            ("tavern", vec![tavern.clone()]),
            ("battle", vec![battle.clone()]),
        ]),
        player.clone(),
    )
    .expect("music");
    assert!(
        player.socket_path().is_none(),
        "mpv starts on the first play, not before"
    );

    let began = Instant::now();
    let playing = call(&music, "play_track", json!({"mood": "tavern"}))
        .await
        .expect("play");
    let first_play = began.elapsed();
    assert_eq!(playing["track"], json!(tavern.join("a.wav")));
    assert_eq!(playing["playlist_length"], 2);
    assert_eq!(playing["backend"], "mpv");
    let socket = player.socket_path().expect("socket");
    let socket_dir = socket.parent().expect("dir").to_owned();
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&socket_dir)
            .expect("dir")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700, "the socket's directory is private");
    }
    wait_for(&socket, "path", Ok(json!(tavern.join("a.wav")))).await;
    assert_eq!(property(&socket, "playlist-count").await, Ok(json!(2)));
    wait_for(&socket, "idle-active", Ok(json!(false))).await;
    let pid = player.pid().await.expect("pid");

    // Another mood replaces the playlist in the same mpv, and answers quickly.
    let began = Instant::now();
    let switched = call(&music, "play_track", json!({"mood": "battle"}))
        .await
        .expect("switch");
    let warm_play = began.elapsed();
    assert_eq!(switched["track"], json!(battle));
    assert_eq!(switched["playlist_length"], 1);
    wait_for(&socket, "path", Ok(json!(battle))).await;
    assert_eq!(property(&socket, "playlist-count").await, Ok(json!(1)));
    assert_eq!(player.pid().await, Some(pid), "the same mpv plays on");
    eprintln!("play_track: first (starts mpv) {first_play:?}, warm {warm_play:?}");
    assert!(
        warm_play < Duration::from_millis(200),
        "warm play took {warm_play:?}"
    );

    let stopped = call(&music, "stop_music", json!({})).await.expect("stop");
    assert_eq!(
        stopped,
        json!({"stopped": true, "mood": "battle", "track": battle, "backend": "mpv"})
    );
    // mpv says idle a moment before it lets go of the file: wait for each.
    wait_for(&socket, "idle-active", Ok(json!(true))).await;
    wait_for(&socket, "path", Err("property unavailable".to_owned())).await;
    assert_eq!(property(&socket, "playlist-count").await, Ok(json!(0)));
    let again = call(&music, "stop_music", json!({}))
        .await
        .expect("stop again");
    assert_eq!(again["stopped"], false);

    // An mpv that died is started again on the next play.
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(pid).expect("pid")),
        nix::sys::signal::Signal::SIGKILL,
    )
    .expect("kill mpv");
    let revived = call(&music, "play_track", json!({"mood": "tavern"}))
        .await
        .expect("revive");
    assert_eq!(revived["playlist_length"], 2);
    let new_pid = player.pid().await.expect("new pid");
    assert_ne!(new_pid, pid);
    wait_for(&socket, "path", Ok(json!(tavern.join("a.wav")))).await;

    // Dropping the provider kills mpv and removes its socket's directory.
    drop(music);
    drop(player);
    eventually("mpv to be killed", || gone(new_pid)).await;
    assert!(
        !socket_dir.exists(),
        "{} is left behind",
        socket_dir.display()
    );
}

#[tokio::test]
async fn mpv_chosen_by_settings_plays_and_refuses_nothing_it_can_play() {
    require("mpv");
    let dir = tempfile::tempdir().expect("tempdir");
    let track = dir.path().join("rain.wav");
    sine(&track, 3, 220);
    let music = Music::new(MusicSettings {
        player: PlayerChoice::Mpv,
        moods: moods(&[("rain", vec![dir.path().to_owned()])]),
        mpv_args: vec!["--ao=null".to_owned()],
    })
    .expect("music");
    assert_eq!(music.backend(), "mpv");
    let stop_first = call(&music, "stop_music", json!({}))
        .await
        .expect("stop before play");
    assert_eq!(stop_first["stopped"], false, "stopping starts no player");
    let playing = call(
        &music,
        "play_track",
        json!({"mood": "rain", "shuffle": true}),
    )
    .await
    .expect("play");
    assert_eq!(playing["track"], json!(track));
    assert_eq!(playing["backend"], "mpv");
    let stopped = call(&music, "stop_music", json!({})).await.expect("stop");
    assert_eq!(stopped["stopped"], true);
    assert_eq!(stopped["track"], json!(track));
}

#[tokio::test]
async fn mpv_that_cannot_start_is_reported() {
    let mpv = require("mpv");
    let dir = tempfile::tempdir().expect("tempdir");
    let track = dir.path().join("x.wav");
    sine(&track, 1, 440);
    let player = Arc::new(MpvPlayer::new(
        mpv,
        vec!["--no-such-option-at-all".to_owned()],
    ));
    let music = Music::with_player(moods(&[("x", vec![track])]), player).expect("music");
    let error = call(&music, "play_track", json!({"mood": "x"}))
        .await
        .expect_err("bad args");
    assert!(
        error
            .0
            .starts_with("cannot play mood 'x': mpv exited as it started"),
        "{}",
        error.0
    );
    assert!(error.0.contains("--no-such-option-at-all"), "{}", error.0);
}
