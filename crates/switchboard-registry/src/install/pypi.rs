//! PyPI packages: a virtual environment of their own (`python3 -m venv DIR/venv`), `pip
//! install PACKAGE==VERSION` into it, then the package's console script (from its
//! `*.dist-info/entry_points.txt`) is the command.

use std::path::{Path, PathBuf};

use tokio_util::sync::CancellationToken;

use super::process::Step;
use super::{InstallError, ProgressFn, Settings};

/// Installs `spec` (`PACKAGE==VERSION`; in tests a wheel path) into `dir/venv` and returns
/// the absolute path of `package`'s console script.
pub(crate) async fn install(
    spec: &str,
    package: &str,
    dir: &Path,
    settings: &Settings,
    cancel: &CancellationToken,
    progress: ProgressFn<'_>,
) -> Result<PathBuf, InstallError> {
    let venv = dir.join("venv");
    progress(10, "python3 -m venv");
    Step {
        program: "python3",
        args: vec!["-m".into(), "venv".into(), venv.display().to_string()],
        env: &settings.env,
        deadline: settings.deadline,
    }
    .run(cancel)
    .await?;
    progress(40, &format!("pip install {spec}"));
    let python = venv.join("bin").join("python");
    let python = python.display().to_string();
    Step {
        program: &python,
        args: vec![
            "-m".into(),
            "pip".into(),
            "install".into(),
            "--disable-pip-version-check".into(),
            "--no-input".into(),
            spec.to_owned(),
        ],
        env: &settings.env,
        deadline: settings.deadline,
    }
    .run(cancel)
    .await?;
    progress(80, &format!("reading the console scripts of {package}"));
    let entry_points = find_entry_points(&venv, package)?;
    let text = std::fs::read_to_string(&entry_points).map_err(|error| {
        InstallError::Io(format!("cannot read {}", entry_points.display()), error)
    })?;
    let script = pick_script(package, &text).map_err(|reason| {
        InstallError::NoCommand(format!("{}: {reason}", entry_points.display()))
    })?;
    let path = venv.join("bin").join(&script);
    if !path.exists() {
        return Err(InstallError::NoCommand(format!(
            "pip installed {package} but its script '{script}' is not at {}",
            path.display()
        )));
    }
    progress(90, &format!("found console script {script}"));
    Ok(path)
}

/// A project name as PyPI compares them: lowercase, `-`, `_` and `.` alike.
pub(crate) fn normalize(name: &str) -> String {
    name.to_lowercase().replace(['_', '.'], "-")
}

/// `entry_points.txt` of `package`'s `*.dist-info` in the venv's site-packages.
fn find_entry_points(venv: &Path, package: &str) -> Result<PathBuf, InstallError> {
    let wanted = normalize(package);
    let lib = venv.join("lib");
    let not_found = || {
        InstallError::NoCommand(format!(
            "pip installed {package} but no {package}-*.dist-info is under {}",
            lib.display()
        ))
    };
    let pythons = std::fs::read_dir(&lib)
        .map_err(|error| InstallError::Io(format!("cannot list {}", lib.display()), error))?;
    for python in pythons.flatten() {
        let site = python.path().join("site-packages");
        let Ok(entries) = std::fs::read_dir(&site) else {
            continue;
        };
        for entry in entries.flatten() {
            let file_name = entry.file_name();
            let Some(stem) = file_name
                .to_str()
                .and_then(|n| n.strip_suffix(".dist-info"))
            else {
                continue;
            };
            let name = stem.rsplit_once('-').map_or(stem, |(name, _)| name);
            if normalize(name) == wanted {
                let entry_points = entry.path().join("entry_points.txt");
                if !entry_points.exists() {
                    return Err(InstallError::NoCommand(format!(
                        "package {package} declares no console scripts ({} is absent): it is \
                         not a command-line server",
                        entry_points.display()
                    )));
                }
                return Ok(entry_points);
            }
        }
    }
    Err(not_found())
}

/// The console script to run: the one named like the package, else the only one.
pub(crate) fn pick_script(package: &str, entry_points: &str) -> Result<String, String> {
    let mut section = String::new();
    let mut scripts = Vec::new();
    for line in entry_points.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with(['#', ';']) {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = name.trim().to_owned();
        } else if section == "console_scripts"
            && let Some((name, _)) = line.split_once('=')
        {
            scripts.push(name.trim().to_owned());
        }
    }
    let wanted = normalize(package);
    if let Some(script) = scripts.iter().find(|s| normalize(s) == wanted) {
        return Ok(script.clone());
    }
    match scripts.as_slice() {
        [only] => Ok(only.clone()),
        [] => Err(format!(
            "package {package} declares no console scripts: it is not a command-line server"
        )),
        several => Err(format!(
            "package {package} has several console scripts and none is named like it: {}",
            several.join(", ")
        )),
    }
}
