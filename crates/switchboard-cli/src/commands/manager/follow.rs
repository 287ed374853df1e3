//! Following an operation until it ends: a one-line progress bar on stderr when it is a
//! terminal (redrawn with `\r`), else each new step as a line; what it waits for and how to
//! give it; and the values of `--env` handed over when it asks for its inputs.

use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::time::Duration;

use anyhow::bail;
use switchboard::manager::{Operation, Waiting};

use super::{Target, say};

/// The bar's width in characters.
const BAR: usize = 20;
/// How long one wait for news lasts before it is asked again.
const POLL: Duration = Duration::from_secs(30);
/// An install's progress once its inputs are settled (the manager's "installing into …"
/// step): a detached install that has not asked for input by then never will.
const PAST_INPUTS: u8 = 15;

/// How progress is shown.
pub(super) struct Progress {
    terminal: bool,
    quiet: bool,
    /// Steps already shown.
    shown: usize,
    /// Whether the bar is on the screen (a note first clears it).
    drawn: bool,
}

impl Progress {
    pub(super) fn new() -> Self {
        Self {
            terminal: std::io::stderr().is_terminal(),
            quiet: false,
            shown: 0,
            drawn: false,
        }
    }

    /// Shows nothing but notes.
    pub(super) fn quiet() -> Self {
        Self {
            quiet: true,
            ..Self::new()
        }
    }

    fn show(&mut self, operation: &Operation) {
        let new = operation.steps.get(self.shown..).unwrap_or_default();
        self.shown = operation.steps.len();
        if self.quiet {
            return;
        }
        if self.terminal {
            self.draw(operation);
        } else {
            for step in new {
                say(&format!("[{:>3}%] {}", step.progress, step.message));
            }
        }
    }

    fn draw(&mut self, operation: &Operation) {
        let columns = std::env::var("COLUMNS")
            .ok()
            .and_then(|c| c.parse::<usize>().ok())
            .unwrap_or(80)
            .max(BAR + 10);
        let filled = usize::from(operation.progress.min(100)) * BAR / 100;
        let line = format!(
            "[{}{}] {:>3}% {}",
            "#".repeat(filled),
            " ".repeat(BAR - filled),
            operation.progress,
            operation.message
        );
        let line: String = line.chars().take(columns - 1).collect();
        let mut stderr = std::io::stderr().lock();
        let _ = write!(stderr, "\r{line}\x1b[K");
        let _ = stderr.flush();
        self.drawn = true;
    }

    /// A line of its own (the bar is drawn again below it).
    fn note(&mut self, text: &str) {
        if self.drawn {
            let _ = write!(std::io::stderr(), "\r\x1b[K");
            self.drawn = false;
        }
        say(text);
    }

    /// Draws the bar again (after a note).
    fn redraw(&mut self, operation: &Operation) {
        if self.terminal && !self.quiet {
            self.draw(operation);
        }
    }

    fn end(&mut self) {
        if self.drawn {
            say("");
            self.drawn = false;
        }
    }
}

/// Follows operation `id` until it is over and returns it as it ended. When it waits for
/// input, `held` values are given to it (once); when there are none, the operator is told
/// how to give them — or, for a Host of this process, asked on the terminal. With
/// `until_given`, returns as soon as `held` was given or the operation went past its inputs.
pub(super) async fn follow(
    target: &Target,
    id: &str,
    held: &mut BTreeMap<String, String>,
    progress: &mut Progress,
    until_given: bool,
) -> anyhow::Result<Operation> {
    let mut told: Option<(Waiting, usize)> = None;
    let mut operation = target.status(id).await?;
    loop {
        progress.show(&operation);
        if operation.state.is_final() {
            progress.end();
            return Ok(operation);
        }
        if until_given
            && (held.is_empty() || operation.progress >= PAST_INPUTS && operation.waiting.is_none())
        {
            return Ok(operation);
        }
        let fresh = operation.waiting.as_ref().is_some_and(|waiting| {
            told.as_ref()
                .is_none_or(|(w, steps)| w != waiting || *steps != operation.steps.len())
        });
        match operation.waiting.clone() {
            Some(Waiting::Input { .. }) if !held.is_empty() => {
                let values = std::mem::take(held);
                let names: Vec<&str> = values.keys().map(String::as_str).collect();
                progress.note(&format!("giving {id} its input: {}", names.join(", ")));
                let seen = target.input(id, &values).await?.steps.len();
                // Until the operation takes them it still says it waits: that is not a new
                // question (a refusal or another question comes with a step of its own).
                told = operation.waiting.clone().map(|w| (w, seen));
                operation = target.next(id, seen, POLL).await?;
                continue;
            }
            Some(Waiting::Input { names }) if fresh => {
                told = operation
                    .waiting
                    .clone()
                    .map(|w| (w, operation.steps.len()));
                if let Target::Local(_) = target {
                    let Some(values) = ask(&names).await? else {
                        let _ = target.cancel(id, Some("its inputs were not given")).await;
                        progress.end();
                        bail!(
                            "the server needs {}: no gateway runs this config, so give them to this command (--env NAME=VALUE), or run it on a terminal to be asked",
                            names.join(", ")
                        );
                    };
                    let seen = target.input(id, &values).await?.steps.len();
                    told = operation.waiting.clone().map(|w| (w, seen));
                    operation = target.next(id, seen, POLL).await?;
                    continue;
                }
                progress.note(&format!(
                    "{id} waits for input: {}\n  give it: switchboard operations input {id} {}\n  (or keep secrets out of your shell history: switchboard operations input {id} --from-stdin, then NAME=VALUE lines)",
                    names.join(", "),
                    names
                        .iter()
                        .map(|n| format!("{n}=VALUE"))
                        .collect::<Vec<_>>()
                        .join(" ")
                ));
                progress.redraw(&operation);
            }
            Some(Waiting::Approval { id: approval }) if fresh => {
                told = operation
                    .waiting
                    .clone()
                    .map(|w| (w, operation.steps.len()));
                progress.note(&format!(
                    "{id} waits for approval: switchboard approvals approve {approval} (or deny {approval})"
                ));
                progress.redraw(&operation);
            }
            _ => {}
        }
        operation = target.next(id, operation.steps.len(), POLL).await?;
    }
}

/// Says which `--env` values were never asked for.
pub(super) fn unused(held: &BTreeMap<String, String>) {
    if !held.is_empty() {
        let names: Vec<&str> = held.keys().map(String::as_str).collect();
        say(&format!(
            "note: --env {}: not used (the server did not ask for them)",
            names.join(", ")
        ));
    }
}

/// Asks for `names` on the terminal, without echo; `None` when stdin is not a terminal. The
/// end of input at a prompt gives no value: an error, nothing is sent.
async fn ask(names: &[String]) -> anyhow::Result<Option<BTreeMap<String, String>>> {
    if !std::io::stdin().is_terminal() {
        return Ok(None);
    }
    interrupt_restores_echo();
    let names = names.to_vec();
    let asked = tokio::task::spawn_blocking(move || {
        let mut values = BTreeMap::new();
        say("the server needs values for its inputs (not echoed; secrets go to the secrets file only):");
        for name in names {
            let _ = write!(std::io::stderr(), "{name}: ");
            let _ = std::io::stderr().flush();
            let echo_off = stty("-echo");
            let mut line = String::new();
            let read = std::io::stdin().read_line(&mut line);
            if echo_off {
                stty("echo");
            }
            say("");
            if read? == 0 {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    format!("no value for {name} (the input ended)"),
                ));
            }
            values.insert(name, line.trim_end_matches(['\n', '\r']).to_owned());
        }
        Ok::<_, std::io::Error>(values)
    })
    .await??;
    Ok(Some(asked))
}

/// From the first prompt on, Ctrl-C turns the terminal's echo back on before the command
/// ends as it would have (exit 130): ended mid-prompt, it would leave the shell without echo.
fn interrupt_restores_echo() {
    static WATCHING: std::sync::Once = std::sync::Once::new();
    WATCHING.call_once(|| {
        tokio::spawn(async {
            if tokio::signal::ctrl_c().await.is_ok() {
                stty("echo");
                say("");
                std::process::exit(130);
            }
        });
    });
}

/// Runs `stty SETTING` on the terminal; whether it worked.
fn stty(setting: &str) -> bool {
    std::process::Command::new("stty")
        .arg(setting)
        .stdin(std::process::Stdio::inherit())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}
