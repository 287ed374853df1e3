//! A small W3C WebDriver client over reqwest, enough to drive Debian's headless Chromium
//! through its `chromedriver`: start a session, open a URL, find and click elements, read
//! the page, take screenshots. (fantoccini would do the same but brings a second `http`,
//! `icu` and `thiserror` into the lock file for a few JSON requests.)

use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use base64::Engine;
use serde_json::{Value, json};

/// The key of an element reference in WebDriver answers.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// Where the browser and its driver must be; a missing one fails the test saying how to
/// install it.
pub fn browser_binaries() -> (PathBuf, PathBuf) {
    let chromium = PathBuf::from("/usr/bin/chromium");
    let driver = PathBuf::from("/usr/bin/chromedriver");
    for (path, package) in [(&chromium, "chromium"), (&driver, "chromium-driver")] {
        assert!(
            path.is_file(),
            "{} is missing: the console's browser test needs Debian's {package} — run \
             `scripts/install-test-deps.sh` (or, as root: apt-get install -y --no-install-recommends chromium chromium-driver)",
            path.display()
        );
    }
    (chromium, driver)
}

/// A running chromedriver with one headless Chromium session; both end when dropped.
pub struct Browser {
    http: reqwest::Client,
    driver: Child,
    session: String,
    base: String,
}

impl Browser {
    pub async fn start() -> Self {
        let (chromium, driver_path) = browser_binaries();
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("a free port")
            .port();
        // Its own process group, so the browser it starts goes with it.
        let driver = Command::new(&driver_path)
            .arg(format!("--port={port}"))
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chromedriver");
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(60))
            .build()
            .expect("client");
        let base = format!("http://127.0.0.1:{port}");
        let mut browser = Self {
            http,
            driver,
            session: String::new(),
            base,
        };
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        loop {
            let ready = browser
                .http
                .get(format!("{}/status", browser.base))
                .send()
                .await
                .ok();
            if let Some(answer) = ready
                && let Ok(status) = answer.json::<Value>().await
                && status["value"]["ready"] == true
            {
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "chromedriver did not start"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let created = browser
            .command(
                reqwest::Method::POST,
                "/session",
                json!({"capabilities": {"alwaysMatch": {
                    "browserName": "chrome",
                    "goog:chromeOptions": {
                        "binary": chromium.display().to_string(),
                        "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                                 "--disable-dev-shm-usage", "--window-size=1280,1000",
                                 "--hide-scrollbars", "--force-device-scale-factor=1"]
                    }
                }}}),
            )
            .await;
        browser.session = created["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session: {created}"))
            .to_owned();
        browser
    }

    async fn command(&self, method: reqwest::Method, path: &str, body: Value) -> Value {
        let mut request = self.http.request(method, format!("{}{path}", self.base));
        if !body.is_null() {
            request = request.json(&body);
        }
        let answer: Value = request
            .send()
            .await
            .expect("WebDriver request")
            .json()
            .await
            .expect("WebDriver JSON");
        answer["value"].clone()
    }

    fn path(&self, rest: &str) -> String {
        format!("/session/{}{rest}", self.session)
    }

    pub async fn open(&self, url: &str) {
        self.command(
            reqwest::Method::POST,
            &self.path("/url"),
            json!({"url": url}),
        )
        .await;
    }

    /// The first element matching `css` now, if any.
    pub async fn find(&self, css: &str) -> Option<String> {
        let found = self
            .command(
                reqwest::Method::POST,
                &self.path("/element"),
                json!({"using": "css selector", "value": css}),
            )
            .await;
        found[ELEMENT].as_str().map(str::to_owned)
    }

    /// Waits (polling, without reloading) until an element matches `css`.
    pub async fn wait_for(&self, css: &str, limit: Duration) -> String {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            if let Some(element) = self.find(css).await {
                return element;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "{css} did not appear within {limit:?}; the page: {}",
                self.source().await
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub async fn click(&self, element: &str) {
        self.command(
            reqwest::Method::POST,
            &self.path(&format!("/element/{element}/click")),
            json!({}),
        )
        .await;
    }

    pub async fn text(&self, element: &str) -> String {
        let text = self
            .command(
                reqwest::Method::GET,
                &self.path(&format!("/element/{element}/text")),
                Value::Null,
            )
            .await;
        text.as_str().unwrap_or_default().to_owned()
    }

    pub async fn execute(&self, script: &str) -> Value {
        self.command(
            reqwest::Method::POST,
            &self.path("/execute/sync"),
            json!({"script": script, "args": []}),
        )
        .await
    }

    pub async fn source(&self) -> String {
        let source = self
            .command(reqwest::Method::GET, &self.path("/source"), Value::Null)
            .await;
        source.as_str().unwrap_or_default().to_owned()
    }

    pub async fn url(&self) -> String {
        let url = self
            .command(reqwest::Method::GET, &self.path("/url"), Value::Null)
            .await;
        url.as_str().unwrap_or_default().to_owned()
    }

    /// Saves a PNG of the window to `path`.
    pub async fn screenshot(&self, path: &Path) {
        let encoded = self
            .command(reqwest::Method::GET, &self.path("/screenshot"), Value::Null)
            .await;
        let png = base64::engine::general_purpose::STANDARD
            .decode(encoded.as_str().expect("base64"))
            .expect("a PNG");
        assert!(png.starts_with(b"\x89PNG"), "a PNG");
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).expect("screenshot directory");
        }
        std::fs::write(path, png).expect("write the screenshot");
    }
}

impl Browser {
    /// Closes the browser, then the driver.
    pub async fn quit(self) {
        self.command(reqwest::Method::DELETE, &self.path(""), Value::Null)
            .await;
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // The driver's whole group: chromium and its helpers too.
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.driver.id())])
            .status();
        let _ = self.driver.wait();
    }
}
