//! `switchboard console`: prints the running gateway's console URL with a one-time sign-in
//! link (a code minted through the admin endpoint with the admin token, valid for two
//! minutes and once), and opens it in a browser when one is available (`xdg-open` under a
//! graphical session; never an error when there is none). The browser is given a file only
//! its user can read that sends it on to the link, never the link itself: a command line is
//! readable by every local user (`/proc/PID/cmdline`), who could redeem the code first.

use std::path::PathBuf;
use std::process::{ExitCode, Stdio};

use serde_json::json;

use crate::admin::client::AdminClient;
use crate::output::print_line;

#[derive(Debug, clap::Args)]
pub struct ConsoleArgs {
    /// The running gateway's admin file (default: see `switchboard serve --help`).
    #[arg(long, value_name = "FILE")]
    admin_file: Option<PathBuf>,
    /// Only print the link; do not open a browser.
    #[arg(long)]
    no_open: bool,
    /// The name your decisions are recorded under in the ledger (default: $USER).
    #[arg(long, value_name = "NAME")]
    operator: Option<String>,
}

fn operator(given: Option<String>) -> String {
    given
        .or_else(|| std::env::var("USER").ok())
        .filter(|name| !name.trim().is_empty())
        .unwrap_or_else(|| "operator".to_owned())
}

/// Opens `url` with `xdg-open` when a graphical session is there, through a redirecting
/// page (mode 0600) so the URL is on no command line; says whether it tried.
fn open_browser(url: &str) -> bool {
    let graphical = ["DISPLAY", "WAYLAND_DISPLAY"]
        .iter()
        .any(|name| std::env::var_os(name).is_some_and(|value| !value.is_empty()));
    if !graphical {
        return false;
    }
    let Some(page) = redirecting_page(url) else {
        return false;
    };
    std::process::Command::new("xdg-open")
        .arg(&page)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .is_ok()
}

/// A page that sends the browser on to `url`, readable by this user alone: in
/// `$XDG_RUNTIME_DIR` (the user's own), else the temporary directory.
fn redirecting_page(url: &str) -> Option<PathBuf> {
    let dir = std::env::var_os("XDG_RUNTIME_DIR")
        .filter(|dir| !dir.is_empty())
        .map_or_else(std::env::temp_dir, PathBuf::from);
    let page = dir.join(format!("switchboard-console-{}.html", std::process::id()));
    // The link is the gateway's own http://127.0.0.1:PORT/console/sign-in/HEX: nothing in it
    // needs escaping in an attribute, but quotes and angle brackets are refused anyway.
    if url.contains(['"', '<', '>', '\'']) {
        return None;
    }
    let html = format!(
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\">\
         <meta http-equiv=\"refresh\" content=\"0;url={url}\"><title>Switchboard console</title></head>\
         <body><p><a href=\"{url}\">Sign in to the Switchboard console</a></p></body></html>\n"
    );
    switchboard::private_file::write(&page, html.as_bytes()).ok()?;
    Some(page)
}

pub async fn run(config: Option<&std::path::Path>, args: ConsoleArgs) -> anyhow::Result<ExitCode> {
    let client = AdminClient::for_config(args.admin_file.as_deref(), config)?;
    let answer = client
        .post(
            "/console/codes",
            json!({"operator": operator(args.operator)}),
        )
        .await?;
    let path = answer["path"]
        .as_str()
        .ok_or_else(|| anyhow::anyhow!("the gateway's answer has no sign-in path"))?;
    let link = format!("{}{path}", client.url());
    print_line(&format!("console: {}/console/", client.url()))?;
    print_line(&format!(
        "sign in (once, within {} s): {link}",
        answer["expires_in_s"].as_u64().unwrap_or(120)
    ))?;
    if !args.no_open && open_browser(&link) {
        crate::output::note!("opening it in your browser");
    }
    Ok(ExitCode::SUCCESS)
}
