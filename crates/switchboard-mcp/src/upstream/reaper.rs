//! Kills the stdio servers' and command hooks' process groups ([`super::process_group`]) when
//! this process dies without doing it itself (SIGKILL, the OOM killer, a crash). A clean exit
//! kills them already, but a server that does not stop when its stdin closes — an `npx`
//! wrapper whose node process keeps timers, a server with a background job — would otherwise
//! outlive a killed gateway.
//!
//! The reaper is a small `sh` started with the first such group, in its own process group,
//! reading `+ PGID` and `- PGID` lines on its stdin as groups start and end. Only this process
//! holds the pipe's other end (std opens pipes close-on-exec), so however this process ends,
//! the reaper reads end of file and kills every group still listed, then exits. Nothing is
//! signalled from within a signal handler and no `unsafe` is needed (unlike
//! `PR_SET_PDEATHSIG`, which would also reach only the direct child, not its group).

use std::io::Write;
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// What the reaper runs: keep the list of groups, and at end of input kill what is listed.
const SCRIPT: &str = r#"groups=" "
while read -r op group; do
  case $group in ''|*[!0-9]*) continue ;; esac
  case $op in
    +) groups="$groups$group " ;;
    -) case $groups in *" $group "*) groups="${groups%% $group *} ${groups#* $group }" ;; esac ;;
  esac
done
for group in $groups; do kill -s KILL -- "-$group" 2>/dev/null; done
"#;

/// The running reaper, or why there is none.
struct Reaper {
    /// Kept so the reaper is waited for (no zombie) if it ends first.
    child: Child,
    input: ChildStdin,
}

static REAPER: OnceLock<Mutex<Result<Reaper, String>>> = OnceLock::new();

fn reaper() -> &'static Mutex<Result<Reaper, String>> {
    REAPER.get_or_init(|| Mutex::new(start()))
}

fn start() -> Result<Reaper, String> {
    let mut child = Command::new("sh")
        .args(["-c", SCRIPT])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .map_err(|error| format!("cannot start sh: {error}"))?;
    let input = child
        .stdin
        .take()
        .ok_or_else(|| "the reaper's stdin was not created".to_owned())?;
    Ok(Reaper { child, input })
}

/// Lists a child's process group, to be killed if this process dies first.
pub(super) fn adopt(pgid: i32) {
    tell(&format!("+ {pgid}\n"));
}

/// Takes a process group off the list once it has been killed (so a later group that reuses
/// the number is not).
pub(super) fn release(pgid: i32) {
    tell(&format!("- {pgid}\n"));
}

/// Ends the reaper at a clean exit: it kills whatever group is still listed and is waited
/// for, so it does not linger as a zombie where nothing reaps orphans (a container without
/// an init). Stdio servers started after this are not watched.
pub fn finish() {
    let Some(lock) = REAPER.get() else {
        return;
    };
    let Ok(mut guard) = lock.lock() else {
        return;
    };
    let finished = std::mem::replace(&mut *guard, Err("the reaper was finished".to_owned()));
    if let Ok(Reaper { mut child, input }) = finished {
        drop(input);
        let deadline = Instant::now() + Duration::from_secs(1);
        while matches!(child.try_wait(), Ok(None)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

fn tell(line: &str) {
    let Ok(mut guard) = reaper().lock() else {
        return;
    };
    let failed = match guard.as_mut() {
        // A few bytes into a pipe the reaper drains at once: this does not block.
        Ok(reaper) => match reaper.input.write_all(line.as_bytes()) {
            Ok(()) => return,
            Err(error) => {
                let _ = reaper.child.try_wait();
                format!("the reaper stopped: {error}")
            }
        },
        // Said once, when it first failed (or finished on purpose).
        Err(_) => return,
    };
    tracing::warn!(
        "{failed}; stdio servers that ignore their closed stdin may outlive a killed gateway"
    );
    *guard = Err(failed);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wait_until(mut done: impl FnMut() -> bool) -> bool {
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(5) {
            if done() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    /// A group of one `sleep`, as a server's group.
    fn group() -> Child {
        Command::new("sleep")
            .arg("60")
            .process_group(0)
            .spawn()
            .expect("sleep")
    }

    #[test]
    fn the_reaper_kills_listed_groups_at_end_of_input_and_spares_released_ones() {
        // A reaper of its own, so the process-wide one is left alone.
        let mut reaper = start().expect("the reaper starts");
        let (mut listed, mut released) = (group(), group());
        for line in [
            format!("+ {}\n", listed.id()),
            format!("+ {}\n", released.id()),
            "+ not-a-number\n".to_owned(),
            format!("- {}\n", released.id()),
        ] {
            reaper.input.write_all(line.as_bytes()).expect("write");
        }
        drop(reaper.input);
        assert!(wait_until(|| reaper
            .child
            .try_wait()
            .ok()
            .flatten()
            .is_some()));
        assert!(
            wait_until(|| listed.try_wait().ok().flatten().is_some()),
            "the listed group outlived the reaper"
        );
        assert!(
            released.try_wait().ok().flatten().is_none(),
            "a released group was killed"
        );
        let _ = released.kill();
        let _ = released.wait();
    }
}
