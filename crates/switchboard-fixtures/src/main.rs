//! `switchboard-fixture`: small, fast MCP servers over stdio for Switchboard's tests and
//! benchmarks. Deliberately independent of every Switchboard crate — it speaks
//! newline-delimited JSON-RPC itself — so the gateway is never tested against itself.
//!
//! Modes: `echo` (a tool set for calls, progress, cancellation and list changes, optionally
//! slow to start and in either protocol era), `latency` (tools of known latency), `http-echo`
//! (the echo tools over HTTP, or HTTPS with mutual TLS if asked), `forward` (the bare forwarder the benchmarks measure gateways
//! against), `paginate`, `replay` (a catalog file), `registry` (the MCP Registry's v0.1 read
//! API over a directory of `server.json` files, not MCP itself), `search-api` (SearXNG, Brave
//! and generic JSON search APIs plus test web pages, for the `web` built-in; not MCP),
//! `image-api` (the OpenAI and Automatic1111 image APIs answering generated PNGs, for the
//! `images` built-in; not MCP), `conformance` and `conformance-tasks` (the MCP conformance
//! suite's servers; the latter runs tasks itself), and the faults `exit-immediately`, `hang`, `garbage` and
//! `crash-after`.

mod api;
mod conformance;
mod forward;
mod http;
mod https;
mod image_api;
mod input_rounds;
mod latency;
mod peer;
mod png;
mod registry;
mod search_api;
mod server;
mod task_tools;
mod tasks_server;
mod tools;

use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, Subcommand, ValueEnum};

#[derive(Parser)]
#[command(name = "switchboard-fixture", about = "MCP test servers over stdio")]
struct Args {
    #[command(subcommand)]
    mode: Mode,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Era {
    /// initialize only; server/discover is "method not found".
    Legacy,
    /// server/discover only (2026-07-28); no initialize needed.
    Modern,
    /// Both.
    Both,
}

#[derive(Subcommand)]
enum Mode {
    /// echo, add, sleep, progress, fail, change_tools, pid.
    Echo {
        /// Sleep this long before reading stdin (a slow-starting server).
        #[arg(long, default_value_t = 0)]
        start_delay_ms: u64,
        #[arg(long, value_enum, default_value_t = Era::Legacy)]
        era: Era,
        /// serverInfo.name.
        #[arg(long, default_value = "fixture-echo")]
        name: String,
    },
    /// Tools of known latency (fast_lookup, medium_report, slow_analysis, wait,
    /// bimodal_search, cached_quote, write_note) that declare it in `_meta`.
    Latency {
        /// Multiplies every delay (0.1: ten times faster).
        #[arg(long, default_value_t = 1.0)]
        scale: f64,
    },
    /// The echo tools over Streamable HTTP on 127.0.0.1 (port 0: any free port; the address
    /// is printed on stdout).
    HttpEcho {
        #[arg(long, default_value_t = 0)]
        port: u16,
        /// Serve HTTPS with this certificate (PEM, its chain), with --tls-key.
        #[arg(long, requires = "tls_key")]
        tls_cert: Option<PathBuf>,
        /// The certificate's private key (PEM).
        #[arg(long, requires = "tls_cert")]
        tls_key: Option<PathBuf>,
        /// Ask every client for a certificate this CA (PEM) signed: mutual TLS.
        #[arg(long, requires = "tls_cert")]
        client_ca: Option<PathBuf>,
    },
    /// The floor under every gateway, for the benchmarks: Streamable HTTP on 127.0.0.1 that
    /// hands each message to one server and its answer back and does nothing else — a stdio
    /// server (its command line after `--`) or an HTTP one (`--upstream URL`).
    Forward {
        #[arg(long, default_value_t = 0)]
        port: u16,
        /// An HTTP upstream, `http://127.0.0.1:PORT/mcp`, instead of a command.
        #[arg(long, conflicts_with = "command")]
        upstream: Option<String>,
        /// The stdio server's command line.
        #[arg(last = true, required_unless_present = "upstream")]
        command: Vec<String>,
    },
    /// The MCP Registry's v0.1 read API on 127.0.0.1 over the `*.json` files in DIR (each a
    /// server.json or `{server, _meta}`), re-read on every request; `GET /requests` counts
    /// the others. Port 0: any free port; the address is printed on stdout.
    Registry {
        #[arg(long)]
        dir: PathBuf,
        #[arg(long, default_value_t = 0)]
        port: u16,
    },
    /// Web search APIs (SearXNG `/search`, Brave `/res/v1/web/search`, generic `/json`) and
    /// test pages (`/page/hello`, `/redirect/N`, `/big`, `/binary`, `/slow`, …) on 127.0.0.1;
    /// `GET /last` answers the last request. The address is printed on stdout.
    SearchApi {
        #[arg(long, default_value_t = 0)]
        port: u16,
        /// The Brave subscription token to require (default: any non-empty one).
        #[arg(long)]
        key: Option<String>,
    },
    /// Image APIs (OpenAI `/v1/images/generations`, Automatic1111 `/sdapi/v1/txt2img`)
    /// answering generated PNGs on 127.0.0.1; `GET /last` answers the last request. The
    /// address is printed on stdout.
    ImageApi {
        #[arg(long, default_value_t = 0)]
        port: u16,
        /// The OpenAI bearer key to require (default: any non-empty one).
        #[arg(long)]
        key: Option<String>,
    },
    /// tool_000 … tool_N-1, listed in pages.
    Paginate {
        #[arg(long, default_value_t = 250)]
        tools: usize,
        #[arg(long, default_value_t = 50)]
        page_size: usize,
    },
    /// Serves every tool of a catalog file shaped like shared/catalog/tools.json.
    Replay {
        #[arg(long)]
        catalog: PathBuf,
    },
    /// The tools, resources and prompts the MCP conformance suite's server scenarios expect.
    Conformance,
    /// A server that runs tasks itself (the 2026-07-28 tasks extension) with the one tool
    /// of the suite's `tasks-mrtr-composition` scenario, `test_tool_with_task`.
    ConformanceTasks,
    /// Exits with code 3 at once.
    ExitImmediately,
    /// Reads stdin and never answers.
    Hang,
    /// Answers every line with a line that is not JSON.
    Garbage,
    /// An echo server that exits with code 4 after answering N tool calls.
    CrashAfter {
        #[arg(long)]
        calls: usize,
    },
}

fn main() {
    let args = Args::parse();
    let code = match args.mode {
        Mode::Echo {
            start_delay_ms,
            era,
            name,
        } => {
            std::thread::sleep(Duration::from_millis(start_delay_ms));
            server::serve(server::Options::new(name, era, tools::Toolset::echo()))
        }
        Mode::HttpEcho {
            port,
            tls_cert,
            tls_key,
            client_ca,
        } => {
            let tls = tls_cert
                .as_deref()
                .zip(tls_key.as_deref())
                .map(|(cert, key)| https::TlsFiles {
                    cert,
                    key,
                    client_ca: client_ca.as_deref(),
                });
            http::serve(port, tls.as_ref())
        }
        Mode::Registry { dir, port } => registry::serve(dir, port),
        Mode::SearchApi { port, key } => search_api::serve(port, key),
        Mode::ImageApi { port, key } => image_api::serve(port, key),
        Mode::Forward {
            port,
            upstream,
            command,
        } => forward::serve(
            port,
            match upstream {
                Some(url) => forward::Upstream::Http(url),
                None => forward::Upstream::Stdio(command),
            },
        ),
        Mode::Latency { scale } => server::serve(server::Options::new(
            "fixture-latency".into(),
            Era::Legacy,
            tools::Toolset::latency(scale),
        )),
        Mode::Paginate { tools, page_size } => {
            let mut options = server::Options::new(
                "fixture-paginate".into(),
                Era::Legacy,
                tools::Toolset::numbered(tools),
            );
            options.page_size = page_size.max(1);
            server::serve(options)
        }
        Mode::Replay { catalog } => match tools::Toolset::replay(&catalog) {
            Ok(toolset) => server::serve(server::Options::new(
                "fixture-replay".into(),
                Era::Legacy,
                toolset,
            )),
            Err(error) => {
                eprintln!("switchboard-fixture replay: {error}");
                2
            }
        },
        Mode::Conformance => conformance::serve(),
        Mode::ConformanceTasks => tasks_server::serve(),
        Mode::ExitImmediately => {
            eprintln!("switchboard-fixture: exiting at once, as asked");
            3
        }
        Mode::Hang => {
            let mut sink = String::new();
            while std::io::stdin()
                .read_line(&mut sink)
                .map(|n| n > 0)
                .unwrap_or(false)
            {
                sink.clear();
            }
            0
        }
        Mode::Garbage => {
            let mut line = String::new();
            while std::io::stdin()
                .read_line(&mut line)
                .map(|n| n > 0)
                .unwrap_or(false)
            {
                println!("this is not json");
                line.clear();
            }
            0
        }
        Mode::CrashAfter { calls } => {
            let mut options =
                server::Options::new("fixture-crash".into(), Era::Legacy, tools::Toolset::echo());
            options.crash_after = Some(calls);
            server::serve(options)
        }
    };
    std::process::exit(code);
}
