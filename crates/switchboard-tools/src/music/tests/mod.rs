//! Tests of the music provider: moods and playlists, the null player, errors, and the tool
//! definitions; the real players are in [`mpv`] and [`command`]. Audio files are made with
//! sox; a missing mpv or sox fails the test, pointing at scripts/install-test-deps.sh.

mod command;
mod mpv;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};
use switchboard_core::upstream::{ToolError, ToolProvider};
use switchboard_core::{CallContext, LatencyMeta};

use super::null::{NullPlayer, Request};
use super::{Music, MusicError, MusicSettings, PlayerChoice, playlist, process};

/// The program's path; fails (never skips) when it is not installed.
pub(super) fn require(program: &str) -> PathBuf {
    process::find_program(program).unwrap_or_else(|| {
        panic!(
            "{program} is not installed: run scripts/install-test-deps.sh (it installs mpv and sox)"
        )
    })
}

/// Writes a mono sine wave of `seconds` to `path` with sox.
pub(super) fn sine(path: &Path, seconds: u32, frequency: u32) {
    let sox = require("sox");
    let status = std::process::Command::new(sox)
        .args(["-n", "-r", "8000", "-c", "1"])
        .arg(path)
        .args([
            "synth",
            &seconds.to_string(),
            "sine",
            &frequency.to_string(),
        ])
        .status()
        .expect("run sox");
    assert!(status.success(), "sox failed to write {}", path.display());
}

pub(super) async fn call(music: &Music, tool: &str, arguments: Value) -> Result<Value, ToolError> {
    let arguments: Map<String, Value> = arguments.as_object().cloned().unwrap_or_default();
    let outcome = music.call(tool, arguments, &CallContext::default()).await?;
    assert!(!outcome.content.is_empty(), "{tool} answered no text");
    Ok(outcome.structured_content.expect("structured content"))
}

/// Whether the process is gone: no longer in the process table, or a zombie (killed, not
/// yet reaped).
pub(super) fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z')),
    }
}

/// Waits up to 5 s for `condition`.
pub(super) async fn eventually(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while !condition() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn moods(entries: &[(&str, Vec<PathBuf>)]) -> BTreeMap<String, Vec<PathBuf>> {
    entries
        .iter()
        .map(|(name, paths)| ((*name).to_owned(), paths.clone()))
        .collect()
}

#[test]
fn a_mood_directory_expands_to_its_audio_files_in_name_order() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tavern = dir.path().join("tavern");
    std::fs::create_dir_all(tavern.join("more")).expect("mkdir");
    sine(&tavern.join("b-fire.wav"), 1, 330);
    sine(&tavern.join("a-lute.wav"), 1, 440);
    std::fs::copy(tavern.join("a-lute.wav"), tavern.join("C-CROWD.WAV")).expect("copy");
    std::fs::write(tavern.join("notes.txt"), "not audio").expect("write");
    sine(&tavern.join("more").join("nested.wav"), 1, 550);
    let single = dir.path().join("bell.wav");
    sine(&single, 1, 880);

    let playlist = playlist::resolve(&[tavern.clone(), single.clone()]);
    assert_eq!(
        playlist.tracks,
        vec![
            tavern.join("C-CROWD.WAV"),
            tavern.join("a-lute.wav"),
            tavern.join("b-fire.wav"),
            single
        ]
    );
    assert!(playlist.problems.is_empty(), "{:?}", playlist.problems);

    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).expect("mkdir");
    let none = playlist::resolve(&[empty]);
    assert!(none.tracks.is_empty());
    assert!(
        none.problems[0].contains("holds no audio files (mp3, ogg"),
        "{:?}",
        none.problems
    );
}

#[tokio::test]
async fn the_null_player_answers_like_a_real_one_and_records_what_it_would_play() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (one, two) = (dir.path().join("1.wav"), dir.path().join("2.wav"));
    sine(&one, 1, 440);
    sine(&two, 1, 660);
    let null = Arc::new(NullPlayer::default());
    let music = Music::with_player(
        moods(&[("calm", vec![dir.path().to_owned()])]),
        null.clone(),
    )
    .expect("music");
    assert_eq!(music.backend(), "null");

    let playing = call(&music, "play_track", json!({"mood": "calm"}))
        .await
        .expect("play");
    assert_eq!(
        playing,
        json!({"mood": "calm", "track": one, "playlist_length": 2, "backend": "null",
               "shuffle": false, "problems": []})
    );
    let shuffled = call(
        &music,
        "play_track",
        json!({"mood": "calm", "shuffle": true}),
    )
    .await
    .expect("shuffle");
    assert_eq!(shuffled["playlist_length"], 2);
    assert_eq!(shuffled["shuffle"], true);

    let stopped = call(&music, "stop_music", json!({})).await.expect("stop");
    assert_eq!(stopped["stopped"], true);
    assert_eq!(stopped["mood"], "calm");
    assert_eq!(stopped["track"], shuffled["track"]);
    let again = call(&music, "stop_music", json!({}))
        .await
        .expect("stop again");
    assert_eq!(
        again,
        json!({"stopped": false, "mood": null, "track": null, "backend": "null"})
    );

    let history = null.history();
    assert_eq!(history.len(), 4);
    assert_eq!(history[0], Request::Play(vec![one.clone(), two.clone()]));
    let Request::Play(shuffled_tracks) = &history[1] else {
        panic!("expected a play, got {:?}", history[1]);
    };
    let mut sorted = shuffled_tracks.clone();
    sorted.sort();
    assert_eq!(sorted, vec![one, two]);
    assert_eq!(&history[2..], &[Request::Stop, Request::Stop]);
}

#[tokio::test]
async fn missing_moods_and_bad_paths_are_explained() {
    let dir = tempfile::tempdir().expect("tempdir");
    let song = dir.path().join("song.wav");
    sine(&song, 1, 440);
    let missing = dir.path().join("no-such-dir");
    let music = Music::new(MusicSettings {
        player: PlayerChoice::Null,
        moods: moods(&[
            ("broken", vec![missing.clone()]),
            ("mixed", vec![missing.clone(), song.clone()]),
            ("unset", vec![]),
        ]),
        mpv_args: Vec::new(),
    })
    .expect("music");

    let unknown = call(&music, "play_track", json!({"mood": "battle"}))
        .await
        .expect_err("unknown");
    assert_eq!(unknown.0, "no mood 'battle' (moods: broken, mixed, unset)");
    let broken = call(&music, "play_track", json!({"mood": "broken"}))
        .await
        .expect_err("broken");
    assert_eq!(
        broken.0,
        format!(
            "mood 'broken' has nothing to play: {} does not exist",
            missing.display()
        )
    );
    let unset = call(&music, "play_track", json!({"mood": "unset"}))
        .await
        .expect_err("unset");
    assert!(unset.0.contains("no paths are configured"), "{}", unset.0);
    let bad = call(
        &music,
        "play_track",
        json!({"mood": "mixed", "shuffle": "yes"}),
    )
    .await;
    assert_eq!(
        bad.expect_err("shuffle").0,
        "'shuffle' must be true or false"
    );
    let no_mood = call(&music, "play_track", json!({}))
        .await
        .expect_err("no mood");
    assert!(no_mood.0.contains("'mood' must be"), "{}", no_mood.0);

    // A mood with one good path plays, and says what was wrong with the other.
    let mixed = call(&music, "play_track", json!({"mood": "mixed"}))
        .await
        .expect("mixed");
    assert_eq!(mixed["track"], json!(song));
    assert_eq!(
        mixed["problems"],
        json!([format!("{} does not exist", missing.display())])
    );

    let listed = call(&music, "list_moods", json!({})).await.expect("list");
    assert_eq!(listed["backend"], "null");
    let listed = &listed["moods"];
    assert_eq!(listed[0]["name"], "broken");
    assert_eq!(listed[0]["tracks"], 0);
    assert_eq!(
        listed[0]["problems"][0],
        format!("{} does not exist", missing.display())
    );
    assert_eq!(listed[1]["tracks"], 1);
    assert_eq!(listed[2]["problems"][0], "no paths are configured");

    let empty = Music::new(MusicSettings {
        player: PlayerChoice::Null,
        ..MusicSettings::default()
    })
    .expect("no moods");
    let none = call(&empty, "play_track", json!({"mood": "x"}))
        .await
        .expect_err("none");
    assert_eq!(none.0, "no mood 'x': no moods are configured");
    let unknown_tool = call(&empty, "pause", json!({})).await.expect_err("tool");
    assert!(unknown_tool.0.contains("pause"));
}

#[test]
fn bad_settings_are_refused_and_auto_finds_mpv() {
    let settings = |player| MusicSettings {
        player,
        ..MusicSettings::default()
    };
    let error = |player| Music::new(settings(player)).err().expect("refused");
    assert_eq!(
        error(PlayerChoice::Command(Vec::new())),
        MusicError::EmptyCommand
    );
    assert_eq!(
        error(PlayerChoice::Command(vec![
            "no-such-player-7f3a".to_owned()
        ])),
        MusicError::CommandNotFound {
            program: "no-such-player-7f3a".to_owned()
        }
    );
    let unnamed = Music::new(MusicSettings {
        moods: moods(&[(" ", vec![PathBuf::from("x.wav")])]),
        ..settings(PlayerChoice::Null)
    });
    assert_eq!(unnamed.err(), Some(MusicError::EmptyMoodName));
    require("mpv");
    assert_eq!(
        Music::new(settings(PlayerChoice::Auto))
            .expect("auto")
            .backend(),
        "mpv"
    );
    assert_eq!(
        Music::new(settings(PlayerChoice::Mpv))
            .expect("mpv")
            .backend(),
        "mpv"
    );
    let sleep = Music::new(settings(PlayerChoice::Command(vec![
        "sleep".to_owned(),
        "30".to_owned(),
    ])));
    assert_eq!(sleep.expect("command").backend(), "command");
}

#[test]
fn tools_declare_honest_annotations_schemas_and_fast_latency() {
    let music = Music::new(MusicSettings {
        player: PlayerChoice::Null,
        moods: moods(&[("tavern", vec![]), ("battle", vec![])]),
        mpv_args: Vec::new(),
    })
    .expect("music");
    assert_eq!(music.name(), "music");
    let tools = music.tools();
    let names: Vec<&str> = tools.iter().map(|tool| tool.name.as_str()).collect();
    assert_eq!(names, ["play_track", "stop_music", "list_moods"]);
    for (tool, read_only, idempotent) in [
        (&tools[0], false, false),
        (&tools[1], false, true),
        (&tools[2], true, true),
    ] {
        let annotations = tool.annotations.clone().expect("annotations");
        assert_eq!(annotations.read_only_hint, Some(read_only), "{}", tool.name);
        assert_eq!(annotations.destructive_hint, Some(false), "{}", tool.name);
        assert_eq!(
            annotations.idempotent_hint,
            Some(idempotent),
            "{}",
            tool.name
        );
        assert!(tool.output_schema.is_some(), "{}", tool.name);
        let latency = LatencyMeta::from_meta(tool.meta.as_ref()).expect("latency");
        // FAST: the seed's 50-200 ms at most, well under the tier's 500 ms ceiling; only
        // play_track, which may start mpv, declares a bound past mpv's startup allowance.
        let bound = latency.max_duration_ms.expect("max");
        if tool.name == "play_track" {
            assert_eq!(bound, crate::music::PLAY_TRACK_MAX_MS);
        } else {
            assert!(bound <= 200, "{}", tool.name);
        }
        assert_eq!(latency.idempotent, Some(idempotent), "{}", tool.name);
    }
    assert_eq!(
        tools[0].input_schema["properties"]["mood"]["enum"],
        json!(["battle", "tavern"])
    );
}

/// Regression: a file name that is not UTF-8 made play_track panic (a path cannot go into
/// JSON); it is now skipped and reported, and the call answers.
#[tokio::test]
async fn a_track_whose_name_is_not_utf8_is_skipped_and_reported() {
    use std::os::unix::ffi::OsStrExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let mixed = dir.path().join("mixed");
    let only = dir.path().join("only");
    std::fs::create_dir(&mixed).expect("mkdir");
    std::fs::create_dir(&only).expect("mkdir");
    let latin1 = std::ffi::OsStr::from_bytes(b"caf\xe9.wav");
    for folder in [&mixed, &only] {
        std::fs::write(folder.join(latin1), b"RIFF").expect("latin-1 name");
    }
    std::fs::write(mixed.join("ok.wav"), b"RIFF").expect("ok");
    let null = Arc::new(NullPlayer::default());
    let music = Music::with_player(
        moods(&[
            ("mixed", vec![mixed.clone()]),
            ("only", vec![only.clone()]),
            ("file", vec![only.join(latin1)]),
        ]),
        null.clone(),
    )
    .expect("music");

    let playing = call(&music, "play_track", json!({"mood": "mixed"}))
        .await
        .expect("play");
    assert_eq!(playing["track"], json!(mixed.join("ok.wav")));
    assert_eq!(playing["playlist_length"], 1);
    let problems = playing["problems"].to_string();
    assert!(
        problems.contains("caf\u{fffd}.wav") && problems.contains("not valid UTF-8"),
        "{problems}"
    );
    assert_eq!(null.history().len(), 1);

    for mood in ["only", "file"] {
        let refused = call(&music, "play_track", json!({"mood": mood}))
            .await
            .expect_err(mood);
        assert!(
            refused.to_string().contains("nothing to play")
                && refused.to_string().contains("not valid UTF-8"),
            "{mood}: {refused}"
        );
    }
    let listed = call(&music, "list_moods", json!({})).await.expect("list");
    assert_eq!(listed["moods"][1]["name"], "mixed");
    assert_eq!(listed["moods"][1]["tracks"], 1);
}
