//! The key ring file: create, rotate, retire, the checks on load, and a live ring following
//! the file on an injected clock.

use std::os::unix::fs::PermissionsExt;
use std::sync::Mutex;

use switchboard_mcp::seal::{Binding, OpenError, Purpose};
use tokio::time::Instant;

use crate::followed_file::RECHECK;

use super::*;

/// A clock that moves only when told.
#[derive(Debug)]
struct ManualClock {
    start: Instant,
    offset: Mutex<Duration>,
}

impl ManualClock {
    fn new() -> Arc<Self> {
        Arc::new(Self {
            start: Instant::now(),
            offset: Mutex::default(),
        })
    }

    fn advance(&self, by: Duration) {
        if let Ok(mut offset) = self.offset.lock() {
            *offset += by;
        }
    }

    fn offset(&self) -> Duration {
        self.offset.lock().map(|o| *o).unwrap_or_default()
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Instant {
        self.start + self.offset()
    }

    fn wall(&self) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(1_800_000_000) + self.offset()
    }
}

const BINDING: Binding<'static> = Binding {
    purpose: Purpose::Session,
    agent: "qa",
    route: "/mcp",
};

#[test]
fn create_writes_an_owner_only_ring_and_never_overwrites() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("keys.json");
    RingFile::generate(SystemTime::now())
        .create(&path)
        .expect("create");
    let mode = std::fs::metadata(&path)
        .expect("metadata")
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o600);
    let again = RingFile::generate(SystemTime::now()).create(&path);
    assert!(
        matches!(again, Err(KeyRingError::Exists { .. })),
        "{again:?}"
    );
    let ring = RingFile::load(&path).expect("load");
    assert_eq!(ring.keys.len(), 1);
    let written = std::fs::read_to_string(&path).expect("read");
    let shown = format!("{ring:?}");
    assert!(
        shown.contains(&ring.keys[0].id) && shown.contains("***"),
        "{shown}"
    );
    for secret in written.split('"').filter(|part| part.len() == 64) {
        assert!(!shown.contains(secret), "Debug shows the secret: {shown}");
    }
    let missing = RingFile::load(&dir.path().join("none.json")).expect_err("missing");
    assert!(
        missing.to_string().contains("switchboard keys create"),
        "{missing}"
    );
}

#[test]
fn a_ring_others_may_read_or_a_bad_one_is_refused_saying_where() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("keys.json");
    RingFile::generate(SystemTime::now())
        .create(&path)
        .expect("create");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let error = RingFile::load(&path).expect_err("world-readable");
    assert!(error.to_string().contains("mode 644"), "{error}");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    std::fs::write(&path, "{\"version\": 1,\n \"keys\": [}").expect("write");
    let error = RingFile::load(&path).expect_err("bad JSON");
    assert!(
        error.to_string().contains("keys.json:2:"),
        "the line is named: {error}"
    );
    std::fs::write(
        &path,
        r#"{"version": 1, "keys": [{"id": "zz", "created": 0, "secret": "00"}]}"#,
    )
    .expect("write");
    let error = RingFile::load(&path).expect_err("bad key");
    assert!(error.to_string().contains("keys[0] (id 'zz')"), "{error}");
    std::fs::write(&path, r#"{"version": 1, "keys": []}"#).expect("write");
    let error = RingFile::load(&path).expect_err("empty");
    assert!(error.to_string().contains("no key"), "{error}");
}

#[test]
fn rotate_seals_with_the_new_key_and_retire_drops_old_ones() {
    let now = SystemTime::now();
    let mut file = RingFile::generate(now);
    let first = file.keys[0].id.clone();
    let before = file.ring().expect("ring");
    let second = file.rotate(now);
    let third = file.rotate(now);
    let ring = file.ring().expect("ring");
    assert_eq!(key_id_text(ring.current().id()), third);
    let old = before.seal(&BINDING, now + Duration::from_secs(60), b"s");
    assert_eq!(ring.open(&old, &BINDING, now), Ok(b"s".to_vec()));
    let path = Path::new("keys.json");
    let refused = file.retire(path, &third, now);
    assert!(
        matches!(
            refused,
            Err(KeyRingError::InUse {
                why: InUse::Seals,
                ..
            })
        ),
        "{refused:?}"
    );
    let unknown = file.retire(path, "ffffffff", now);
    assert!(
        matches!(unknown, Err(KeyRingError::NoSuchKey { .. })),
        "{unknown:?}"
    );
    file.retire(path, &second, now).expect("retire");
    assert_eq!(file.retire_keeping(1, now).removed, vec![first.clone()]);
    assert_eq!(file.keys.len(), 1);
    assert_eq!(
        file.retire_keeping(0, now),
        Retired::default(),
        "the newest stays"
    );
    let ring = file.ring().expect("ring");
    assert_eq!(
        ring.open(&old, &BINDING, now),
        Err(OpenError::UnknownKey(first))
    );
}

/// Regression: `retire --keep 1` during a rotation's grace removed the key that sealed,
/// so the new key sealed at once, before every replica had read it. Retiring never removes
/// the key that seals nor the key due to seal next.
#[test]
fn retiring_during_a_grace_keeps_the_key_that_seals_and_the_next() {
    let now = SystemTime::now();
    let path = Path::new("keys.json");
    let mut file = RingFile::generate(now - Duration::from_secs(3_600));
    let sealing = file.keys[0].id.clone();
    let next = file.rotate_sealing_after(now, Duration::from_secs(120));
    let retired = file.retire_keeping(1, now);
    assert_eq!(retired.removed, Vec::<String>::new());
    assert_eq!(retired.kept, vec![(sealing.clone(), InUse::Seals)]);
    let refused = file.retire(path, &sealing, now).expect_err("it seals");
    assert!(refused.to_string().contains("seals now"), "{refused}");
    let (ring, _) = file.ring_at(now).expect("ring");
    assert_eq!(key_id_text(ring.current().id()), sealing);

    // A second rotation in the first's grace: the next key to seal stays too.
    let last = file.rotate_sealing_after(now, Duration::from_secs(240));
    let refused = file.retire(path, &next, now).expect_err("it seals next");
    assert!(
        matches!(
            refused,
            KeyRingError::InUse {
                why: InUse::SealsNext { in_seconds: 120 },
                ..
            }
        ),
        "{refused:?}"
    );
    assert_eq!(file.retire_keeping(1, now).removed, Vec::<String>::new());
    assert_eq!(file.keys.len(), 3);

    // Once the grace is over the older key retires.
    let later = now + Duration::from_secs(300);
    let retired = file.retire_keeping(1, later);
    assert_eq!(retired.removed, vec![sealing, next]);
    assert_eq!(file.keys.len(), 1);
    assert_eq!(file.keys[0].id, last);
}

#[test]
fn a_live_ring_follows_the_file_within_its_recheck() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("keys.json");
    let clock = ManualClock::new();
    let mut file = RingFile::generate(clock.wall());
    file.create(&path).expect("create");
    let live = LiveKeys::follow(&path, clock.clone()).expect("follow");
    let old_id = key_id_text(live.ring().current().id());
    let old = live.seal(&BINDING, Duration::from_secs(600), b"kept");
    let new_id = file.rotate_sealing_after(clock.wall(), ROTATION_GRACE);
    file.save(&path).expect("save");
    assert!(
        !live
            .ring()
            .holds(u32::from_str_radix(&new_id, 16).expect("hex")),
        "not before the recheck"
    );
    // Read within the recheck: the new key opens at once, and seals once every replica has
    // read it too.
    clock.advance(RECHECK);
    let ring = live.ring();
    assert!(ring.holds(u32::from_str_radix(&new_id, 16).expect("hex")));
    assert_eq!(
        key_id_text(ring.current().id()),
        old_id,
        "sealing before its grace"
    );
    clock.advance(ROTATION_GRACE);
    assert_eq!(key_id_text(live.ring().current().id()), new_id);
    assert_eq!(live.open(&old, &BINDING), Ok(b"kept".to_vec()));
    // A file that turns bad leaves the keys in force.
    std::fs::write(&path, "not json").expect("write");
    clock.advance(RECHECK);
    assert_eq!(key_id_text(live.ring().current().id()), new_id);
    // Expiry follows the injected wall clock.
    clock.advance(Duration::from_secs(600));
    assert_eq!(live.open(&old, &BINDING), Err(OpenError::Expired));
}

#[test]
fn the_key_that_seals_is_the_newest_whose_time_has_come() {
    let start = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    let mut file = RingFile::generate(start);
    let first = file.keys[0].id.clone();
    let (ring, switch_at) = file.ring_at(start).expect("ring");
    assert_eq!(key_id_text(ring.current().id()), first);
    assert_eq!(switch_at, None);
    let later = start + Duration::from_secs(3_600);
    let second = file.rotate_sealing_after(later, ROTATION_GRACE);
    let (ring, switch_at) = file.ring_at(later).expect("ring");
    assert_eq!(
        key_id_text(ring.current().id()),
        first,
        "not before its grace"
    );
    assert!(
        ring.holds(u32::from_str_radix(&second, 16).expect("hex")),
        "it opens already"
    );
    assert_eq!(switch_at, Some(later + ROTATION_GRACE));
    let (ring, switch_at) = file.ring_at(later + ROTATION_GRACE).expect("ring");
    assert_eq!(key_id_text(ring.current().id()), second);
    assert_eq!(switch_at, None);
    // Rotated at once, a key seals at once; a file without `seals_from` reads as before.
    let third = file.rotate(later);
    let (ring, _) = file.ring_at(later).expect("ring");
    assert_eq!(key_id_text(ring.current().id()), third);
    let text = serde_json::to_string(&file).expect("json");
    assert_eq!(text.matches("seals_from").count(), 1, "{text}");
}
