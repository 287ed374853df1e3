//! `${VAR}`, `${VAR:-default}` and `$$` in config strings, through an injected environment;
//! and the gateway's environment: the process's, then the secrets file (`KEY=VALUE` lines).

use std::collections::BTreeMap;
use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// Where variables come from.
pub trait Environment {
    fn var(&self, name: &str) -> Option<String>;
}

/// The process environment.
#[derive(Debug, Default, Clone, Copy)]
pub struct ProcessEnvironment;

impl Environment for ProcessEnvironment {
    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok()
    }
}

/// A fixed map of variables (tests, embedding).
#[derive(Debug, Default, Clone)]
pub struct MapEnvironment(pub BTreeMap<String, String>);

impl Environment for MapEnvironment {
    fn var(&self, name: &str) -> Option<String> {
        self.0.get(name).cloned()
    }
}

/// The gateway's variables: the process environment first, then the secrets file — lines of
/// `KEY=VALUE` (`#` comments and blank lines ignored; the value is the rest of the line, as
/// written). The file is read at most once per value, on the first variable the process
/// environment lacks; a missing file is no error.
#[derive(Clone)]
pub struct GatewayEnvironment {
    file: PathBuf,
    secrets: OnceLock<BTreeMap<String, String>>,
}

impl GatewayEnvironment {
    /// The process environment and the secrets file at [`Self::default_secrets_path`].
    pub fn new() -> Self {
        Self {
            file: Self::default_secrets_path(),
            secrets: OnceLock::new(),
        }
    }

    /// The process environment and the secrets file at `path`.
    pub fn with_file(path: impl Into<PathBuf>) -> Self {
        Self {
            file: path.into(),
            secrets: OnceLock::new(),
        }
    }

    /// `$SWITCHBOARD_SECRETS`, else `$XDG_DATA_HOME/switchboard/secrets.env`, else
    /// `$HOME/.local/share/switchboard/secrets.env` (empty variables count as unset; with none
    /// of them, `switchboard/secrets.env` under the working directory, as the other data files).
    pub fn default_secrets_path() -> PathBuf {
        let var = |name: &str| std::env::var_os(name).filter(|value| !value.is_empty());
        if let Some(path) = var("SWITCHBOARD_SECRETS") {
            return PathBuf::from(path);
        }
        var("XDG_DATA_HOME")
            .map(PathBuf::from)
            .or_else(|| var("HOME").map(|home| Path::new(&home).join(".local/share")))
            .unwrap_or_else(|| PathBuf::from("."))
            .join("switchboard")
            .join("secrets.env")
    }

    /// The secrets file this environment reads.
    pub fn secrets_path(&self) -> &Path {
        &self.file
    }

    fn secrets(&self) -> &BTreeMap<String, String> {
        self.secrets.get_or_init(|| {
            let path = &self.file;
            match fs::read_to_string(path) {
                Ok(text) => parse_secrets(&text),
                Err(error) if error.kind() == io::ErrorKind::NotFound => BTreeMap::new(),
                Err(error) => {
                    tracing::warn!("cannot read the secrets file {}: {error}", path.display());
                    BTreeMap::new()
                }
            }
        })
    }
}

impl Default for GatewayEnvironment {
    fn default() -> Self {
        Self::new()
    }
}

/// Shows the file, never the secrets.
impl std::fmt::Debug for GatewayEnvironment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GatewayEnvironment")
            .field("file", &self.file)
            .field("loaded", &self.secrets.get().is_some())
            .finish()
    }
}

impl Environment for GatewayEnvironment {
    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name)
            .ok()
            .or_else(|| self.secrets().get(name).cloned())
    }
}

/// The key of a secrets line (`KEY=VALUE`), or None for a comment, a blank line or a line
/// without `=`.
fn secret_line(line: &str) -> Option<(&str, &str)> {
    let trimmed = line.trim_start();
    if trimmed.is_empty() || trimmed.starts_with('#') {
        return None;
    }
    let (key, value) = trimmed.split_once('=')?;
    // `export NAME=VALUE`, as a file also sourced by a shell writes it.
    let key = key.trim_end();
    let key = key.strip_prefix("export ").map_or(key, str::trim_start);
    Some((key.trim_start_matches('\u{feff}'), value))
}

/// The variables of a secrets file; a key written twice takes its last value.
fn parse_secrets(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(secret_line)
        .map(|(key, value)| (key.to_owned(), value.to_owned()))
        .collect()
}

/// Whether `key` is a variable name: `[A-Za-z_][A-Za-z0-9_]*`.
fn is_secret_key(key: &str) -> bool {
    let mut chars = key.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Sets `key` to `value` in the secrets file at `path`: the line of `key` is replaced (later
/// ones dropped), or a line is added at the end; every other line stays as it was. The file
/// (and its directory, when missing) is created; it is written atomically (a temp file in the
/// same directory, then a rename) with mode 0600.
///
/// Refuses (`InvalidInput`) a key that is not `[A-Za-z_][A-Za-z0-9_]*` and a value with a
/// line break.
pub fn write_secret(path: &Path, key: &str, value: &str) -> io::Result<()> {
    if !is_secret_key(key) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "secret name '{key}' is not allowed: use A-Z a-z 0-9 _, not starting with a digit"
            ),
        ));
    }
    if value.contains(['\n', '\r']) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("the value of secret {key} contains a line break: secrets are one line each"),
        ));
    }
    locked(path, || {
        let text = read_secrets_file(path)?;
        let mut lines = Vec::new();
        let mut written = false;
        for line in text.lines() {
            if secret_line(line).is_some_and(|(k, _)| k == key) {
                if !written {
                    lines.push(format!("{key}={value}"));
                    written = true;
                }
            } else {
                lines.push(line.to_owned());
            }
        }
        if !written {
            lines.push(format!("{key}={value}"));
        }
        write_secrets_file(path, &lines)
    })
}

/// Runs `change` (a read, change and write of the secrets file at `path`) holding an
/// exclusive lock on `<path>.lock`: two installs given secrets at once (or the CLI beside
/// the gateway) each keep their line.
fn locked<T>(path: &Path, change: impl FnOnce() -> io::Result<T>) -> io::Result<T> {
    create_private_dir(path)?;
    crate::file_lock::locked(path, change)?
}

/// The directory of `path`, created 0700 if it is not there.
fn create_private_dir(path: &Path) -> io::Result<PathBuf> {
    let dir = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if !dir.exists() {
        let mut builder = fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder.create(&dir)?;
    }
    Ok(dir)
}

/// Drops every line of the secrets file at `path` whose key starts with `prefix` (comments and
/// other lines stay). A missing file is no error.
pub fn remove_secrets(path: &Path, prefix: &str) -> io::Result<()> {
    drop_lines(path, |key| key.starts_with(prefix))
}

/// Drops the lines whose key `gone` says, under the file's lock; a missing file is no error.
fn drop_lines(path: &Path, gone: impl Fn(&str) -> bool) -> io::Result<()> {
    if !path.exists() {
        return Ok(());
    }
    locked(path, || {
        let text = read_secrets_file(path)?;
        let lines: Vec<String> = text
            .lines()
            .filter(|line| !secret_line(line).is_some_and(|(key, _)| gone(key)))
            .map(str::to_owned)
            .collect();
        if lines.len() == text.lines().count() {
            return Ok(());
        }
        write_secrets_file(path, &lines)
    })
}

/// Drops the line of exactly `key`, if there is one.
pub fn remove_secret(path: &Path, key: &str) -> io::Result<()> {
    drop_lines(path, |k| k == key)
}

/// The file's text; empty when it does not exist.
fn read_secrets_file(path: &Path) -> io::Result<String> {
    match fs::read_to_string(path) {
        Ok(text) => Ok(text),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(String::new()),
        Err(error) => Err(error),
    }
}

/// Writes `lines` to `path` atomically with mode 0600, creating the directory (0700) if
/// needed. A secrets file that is a symlink (into a dotfiles checkout) is written where it
/// points, and stays a link.
fn write_secrets_file(path: &Path, lines: &[String]) -> io::Result<()> {
    let linked;
    let path = if fs::symlink_metadata(path).is_ok_and(|meta| meta.file_type().is_symlink()) {
        linked = fs::canonicalize(path)?;
        linked.as_path()
    } else {
        path
    };
    let dir = create_private_dir(path)?;
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let name = path
        .file_name()
        .map_or_else(|| "secrets".into(), |n| n.to_string_lossy().into_owned());
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let temp = dir.join(format!(".{name}.{}.{n}.tmp", std::process::id()));
    let mut text = lines.join("\n");
    if !text.is_empty() {
        text.push('\n');
    }
    let written = (|| {
        let mut options = OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut file = options.open(&temp)?;
        #[cfg(unix)]
        file.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(0o600))?;
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        fs::rename(&temp, path)
    })();
    if let Err(error) = written {
        let _ = fs::remove_file(&temp);
        return Err(error);
    }
    #[cfg(unix)]
    fs::File::open(&dir)?.sync_all()?;
    Ok(())
}

/// Why a substitution failed, and at which byte offset of the string (the `$` of the reference).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubstitutionError {
    pub offset: usize,
    pub message: String,
    pub hint: Option<String>,
}

/// `text` as a config value that substitution gives back unchanged (every `$` doubled): for
/// values a program writes into a config file that must never name a variable.
pub fn literal(text: &str) -> String {
    text.replace('$', "$$")
}

/// Expands every reference in `text`.
pub fn substitute(text: &str, env: &dyn Environment) -> Result<String, SubstitutionError> {
    if !text.contains('$') {
        return Ok(text.to_owned());
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let mut offset = 0;
    while let Some(index) = rest.find('$') {
        out.push_str(&rest[..index]);
        let after = &rest[index + 1..];
        let here = offset + index;
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            offset += rest[..index].len() + 2;
            rest = tail;
            continue;
        }
        let Some(body) = after.strip_prefix('{') else {
            out.push('$');
            offset += rest[..index].len() + 1;
            rest = after;
            continue;
        };
        let Some(end) = body.find('}') else {
            return Err(SubstitutionError {
                offset: here,
                message: "unclosed '${' in string".to_owned(),
                hint: Some("write ${NAME}, or $$ for a literal $".to_owned()),
            });
        };
        let reference = &body[..end];
        let (name, default) = match reference.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (reference, None),
        };
        // VS Code's `${env:NAME}` is `${NAME}`; its other variables are VS Code's to fill.
        let name = name.strip_prefix("env:").unwrap_or(name);
        if name.contains(':') || matches!(name, "workspaceFolder" | "userHome" | "cwd") {
            return Err(SubstitutionError {
                offset: here,
                message: format!("'${{{reference}}}' is a VS Code variable the gateway cannot fill"),
                hint: Some(
                    "give the value through an environment variable: ${NAME}, ${env:NAME} or ${NAME:-default}"
                        .to_owned(),
                ),
            });
        }
        if let Some(default) = default
            && default.replace("$$", "").contains("${")
        {
            return Err(SubstitutionError {
                offset: here,
                message: format!(
                    "the default of '${{{reference}}}' holds a '$': references do not nest"
                ),
                hint: Some("write $$ for a literal $ in a default".to_owned()),
            });
        }
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(SubstitutionError {
                offset: here,
                message: format!("'${{{reference}}}' is not a valid variable reference"),
                hint: Some(
                    "names are letters, digits and _; write ${NAME} or ${NAME:-default}".to_owned(),
                ),
            });
        }
        match (env.var(name), default) {
            // `:-` as in the shell: the default stands for an unset or an empty variable.
            (Some(value), Some(default)) if value.is_empty() => {
                out.push_str(&default.replace("$$", "$"));
            }
            (Some(value), _) => out.push_str(&value),
            (None, Some(default)) => out.push_str(&default.replace("$$", "$")),
            (None, None) => {
                return Err(SubstitutionError {
                    offset: here,
                    message: format!("environment variable {name} is not set"),
                    hint: Some(format!("set {name}, or give a default: ${{{name}:-value}}")),
                });
            }
        }
        let consumed = rest[..index].len() + 2 + end + 1;
        offset += consumed;
        rest = &rest[consumed..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env() -> MapEnvironment {
        MapEnvironment(BTreeMap::from([
            ("HOME".into(), "/home/a".into()),
            ("EMPTY".into(), String::new()),
        ]))
    }

    #[test]
    fn expands_references() {
        let cases = [
            ("plain", "plain"),
            ("${HOME}/x", "/home/a/x"),
            ("${MISSING:-fallback}", "fallback"),
            ("${HOME:-x}", "/home/a"),
            ("[${EMPTY}]", "[]"),
            ("cost $$5 and $HOME", "cost $5 and $HOME"),
            ("${A:-}", ""),
        ];
        for (input, expected) in cases {
            assert_eq!(substitute(input, &env()).expect(input), expected, "{input}");
        }
    }

    /// A secrets file written to be sourced by a shell too (`export NAME=`), or saved with a
    /// byte order mark, gives its names as written.
    #[test]
    fn secrets_lines_with_export_or_a_byte_order_mark() {
        let secrets = parse_secrets("\u{feff}A=1\nexport GH=abc\n  export  T = x\n");
        assert_eq!(secrets.get("A").map(String::as_str), Some("1"));
        assert_eq!(secrets.get("GH").map(String::as_str), Some("abc"));
        assert_eq!(secrets.get("T").map(String::as_str), Some(" x"));
    }

    #[test]
    fn explains_failures_with_offsets() {
        let missing = substitute("ab ${NOPE}", &env()).expect_err("unset");
        assert_eq!(missing.offset, 3);
        assert!(missing.message.contains("NOPE"));
        assert!(substitute("${bad name}", &env()).is_err());
        assert!(substitute("${HOME", &env()).is_err());
    }

    mod secrets {
        use super::super::*;

        fn file(text: &str) -> (tempfile::TempDir, PathBuf) {
            let dir = tempfile::tempdir().expect("temp dir");
            let path = dir.path().join("secrets.env");
            fs::write(&path, text).expect("write");
            (dir, path)
        }

        /// Writers at once each keep their line (the file's lock), and a secrets file that
        /// is a link is written where it points, staying a link.
        #[test]
        fn concurrent_writers_keep_every_line_and_a_link_stays_a_link() {
            let (dir, real) = file("# secrets\n");
            let path = dir.path().join("linked.env");
            std::os::unix::fs::symlink(&real, &path).expect("symlink");
            let writers: Vec<_> = (0..8)
                .map(|n| {
                    let path = path.clone();
                    std::thread::spawn(move || write_secret(&path, &format!("KEY_{n}"), "v"))
                })
                .collect();
            for writer in writers {
                writer.join().expect("writer").expect("written");
            }
            let text = fs::read_to_string(&real).expect("read");
            for n in 0..8 {
                assert!(text.contains(&format!("KEY_{n}=v")), "{text}");
            }
            assert!(
                fs::symlink_metadata(&path)
                    .expect("meta")
                    .file_type()
                    .is_symlink(),
                "still a link"
            );
            remove_secret(&path, "KEY_3").expect("removed");
            assert!(!fs::read_to_string(&real).expect("read").contains("KEY_3"));
        }

        #[test]
        fn the_process_environment_comes_first_then_the_file() {
            let path_var = std::env::var("PATH").expect("tests run with PATH set");
            let (_dir, path) =
                file("PATH=/from/file\nSB_TEST_ONLY_IN_FILE=s3cret\nSB_TEST_EMPTY=\n");
            let env = GatewayEnvironment::with_file(&path);
            assert_eq!(env.var("PATH"), Some(path_var));
            assert_eq!(env.var("SB_TEST_ONLY_IN_FILE").as_deref(), Some("s3cret"));
            assert_eq!(env.var("SB_TEST_EMPTY").as_deref(), Some(""));
            assert_eq!(env.var("SB_TEST_NOWHERE"), None);
            assert_eq!(
                substitute("Bearer ${SB_TEST_ONLY_IN_FILE}", &env).expect("substituted"),
                "Bearer s3cret"
            );
            // Read once: a later change of the file is not seen by this value.
            fs::write(&path, "SB_TEST_ONLY_IN_FILE=changed\n").expect("write");
            assert_eq!(env.var("SB_TEST_ONLY_IN_FILE").as_deref(), Some("s3cret"));
            assert_eq!(
                GatewayEnvironment::with_file(&path)
                    .var("SB_TEST_ONLY_IN_FILE")
                    .as_deref(),
                Some("changed")
            );
            let debug = format!("{env:?}");
            assert!(!debug.contains("s3cret"), "{debug}");
        }

        #[test]
        fn comments_blank_lines_and_values_as_written() {
            let (_dir, path) = file(
                "# tokens\n\n  # indented comment\nSB_A=x=y # not a comment\r\nnot a line\n SB_B = two words \nSB_A=last\n",
            );
            let env = GatewayEnvironment::with_file(&path);
            assert_eq!(env.var("SB_A").as_deref(), Some("last"));
            assert_eq!(env.var("SB_B").as_deref(), Some(" two words "));
            assert_eq!(env.var("# tokens"), None);
            let parsed = parse_secrets("SB_A=x=y # not a comment\r\n");
            assert_eq!(parsed["SB_A"], "x=y # not a comment");
        }

        #[test]
        fn a_missing_file_is_no_error() {
            let dir = tempfile::tempdir().expect("temp dir");
            let env = GatewayEnvironment::with_file(dir.path().join("none.env"));
            assert_eq!(env.var("SB_TEST_NOWHERE"), None);
            remove_secrets(&dir.path().join("none.env"), "X").expect("nothing to remove");
            assert!(!dir.path().join("none.env").exists());
        }

        #[test]
        fn write_creates_the_file_and_directory_with_mode_0600() {
            let dir = tempfile::tempdir().expect("temp dir");
            let path = dir.path().join("deep/switchboard/secrets.env");
            write_secret(&path, "GITHUB_TOKEN", "ghp_1").expect("written");
            assert_eq!(
                fs::read_to_string(&path).expect("read"),
                "GITHUB_TOKEN=ghp_1\n"
            );
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                let mode = fs::metadata(&path).expect("metadata").permissions().mode();
                assert_eq!(mode & 0o777, 0o600);
            }
            let leftovers: Vec<_> = fs::read_dir(path.parent().expect("dir"))
                .expect("list")
                .filter_map(Result::ok)
                .map(|entry| entry.file_name())
                // The lock beside the file stays, as every writer's meeting point.
                .filter(|name| name != "secrets.env" && name != "secrets.env.lock")
                .collect();
            assert!(
                leftovers.is_empty(),
                "no temporary file is left: {leftovers:?}"
            );
        }

        #[test]
        fn write_replaces_one_line_and_keeps_the_others() {
            let (_dir, path) = file("# mine\nA=1\nB=2\nA=old duplicate\n\nC=3");
            write_secret(&path, "A", "new").expect("written");
            assert_eq!(
                fs::read_to_string(&path).expect("read"),
                "# mine\nA=new\nB=2\n\nC=3\n"
            );
            write_secret(&path, "D", "with spaces and = signs ").expect("written");
            assert_eq!(
                fs::read_to_string(&path).expect("read"),
                "# mine\nA=new\nB=2\n\nC=3\nD=with spaces and = signs \n"
            );
            let env = GatewayEnvironment::with_file(&path);
            assert_eq!(env.var("D").as_deref(), Some("with spaces and = signs "));
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                let mode = fs::metadata(&path).expect("metadata").permissions().mode();
                assert_eq!(mode & 0o777, 0o600, "an existing file becomes 0600 too");
            }
        }

        #[test]
        fn write_refuses_bad_keys_and_multi_line_values() {
            let (_dir, path) = file("A=1\n");
            for key in ["", "1ABC", "A-B", "A B", "A=B", "É"] {
                let error = write_secret(&path, key, "v").expect_err(key);
                assert_eq!(error.kind(), io::ErrorKind::InvalidInput, "{key}");
                assert!(error.to_string().contains("not allowed"), "{error}");
            }
            for value in ["a\nB=2", "a\r"] {
                let error = write_secret(&path, "A", value).expect_err(value);
                assert_eq!(error.kind(), io::ErrorKind::InvalidInput);
                assert!(error.to_string().contains("line break"), "{error}");
            }
            write_secret(&path, "_ok_2", "v").expect("a valid key");
            assert_eq!(fs::read_to_string(&path).expect("read"), "A=1\n_ok_2=v\n");
        }

        #[test]
        fn remove_drops_the_keys_with_a_prefix() {
            let (_dir, path) = file(
                "# github\nGITHUB__TOKEN=1\nGITHUB__ORG=x\nGITLAB=2\n# GITHUB__KEEP=comment\n",
            );
            remove_secrets(&path, "GITHUB__").expect("removed");
            assert_eq!(
                fs::read_to_string(&path).expect("read"),
                "# github\nGITLAB=2\n# GITHUB__KEEP=comment\n"
            );
            let env = GatewayEnvironment::with_file(&path);
            assert_eq!(env.var("GITHUB__TOKEN"), None);
            assert_eq!(env.var("GITLAB").as_deref(), Some("2"));
        }
    }
}
