//! A real HAProxy (Debian's `haproxy`) in front of replicas, for the scale-out tests: round
//! robin, each replica checked at `/readyz` every 300 ms and taken out after two failures;
//! a request is sent again elsewhere only when its connection failed (never one a replica
//! may have started to run).

use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::time::Duration;

use super::{prerequisite, wait_for};

pub struct Haproxy {
    child: std::process::Child,
    /// Where clients connect: `127.0.0.1:PORT`.
    pub address: String,
}

impl Haproxy {
    /// Balances over `replicas` (`HOST:PORT` each); its config is written into `dir`.
    pub fn start(dir: &Path, replicas: &[String]) -> Self {
        let binary = prerequisite(
            "/usr/sbin/haproxy".into(),
            "haproxy (apt-get install haproxy)",
        );
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let mut config = format!(
            "defaults\n  mode http\n  timeout connect 1s\n  timeout client 60s\n  timeout server 60s\n\
             \x20 retries 3\n  retry-on conn-failure\n  option redispatch\n\
             frontend mcp\n  bind 127.0.0.1:{port}\n  default_backend replicas\n\
             backend replicas\n  balance roundrobin\n  option httpchk GET /readyz\n\
             \x20 http-check expect status 200\n  default-server inter 300ms fall 2 rise 1\n"
        );
        for (index, replica) in replicas.iter().enumerate() {
            config.push_str(&format!("  server r{index} {replica} check\n"));
        }
        let file = dir.join("haproxy.cfg");
        std::fs::write(&file, config).expect("write haproxy.cfg");
        let child = std::process::Command::new(binary)
            .arg("-db")
            .arg("-f")
            .arg(&file)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("start haproxy");
        let address = format!("127.0.0.1:{port}");
        wait_for(Duration::from_secs(10), || {
            TcpStream::connect(&address).ok()
        })
        .expect("haproxy listens");
        Self { child, address }
    }
}

impl Drop for Haproxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
