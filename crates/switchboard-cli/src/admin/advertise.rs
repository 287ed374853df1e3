//! Advertising a gateway's admin endpoint: [`AdminReady`] holds the endpoint bound but not
//! yet served nor announced until the gateway is ready (so a start that fails leaves another
//! gateway's admin file alone); [`AdminReady::open`] serves it and writes the admin file, or,
//! when another running gateway keeps the file (the module doc of [`super`] says why),
//! serves it unadvertised and looks again every [`ADVERTISE_RETRY`] until that gateway has
//! stopped. [`Advertised`] is the file as the gateway holds it, or waits to.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::{AdminFile, Published};

/// How often a gateway whose admin file another keeps looks whether that one has stopped.
pub const ADVERTISE_RETRY: Duration = Duration::from_secs(2);

/// The admin endpoint's server, to be spawned once the gateway is ready.
pub(crate) type Serving =
    std::pin::Pin<Box<dyn std::future::Future<Output = std::io::Result<()>> + Send>>;

/// The admin endpoint, listening but not yet serving nor announced: [`AdminReady::open`]
/// does both once the gateway is ready, so a start that fails later leaves the admin file of
/// another gateway alone.
pub(crate) struct AdminReady {
    file: AdminFile,
    path: PathBuf,
    serve: Serving,
}

impl AdminReady {
    /// The endpoint of `file`, at `path`, served by `serve` once opened.
    pub(crate) fn new(file: AdminFile, path: PathBuf, serve: Serving) -> AdminReady {
        AdminReady { file, path, serve }
    }

    /// Serves the endpoint and writes the admin file (removed when the value drops). When
    /// another running gateway keeps the file, the endpoint serves unadvertised, and
    /// [`take_when_free`] looks again until that gateway has stopped.
    pub(crate) fn open(self) -> anyhow::Result<Advertised> {
        let AdminReady { file, path, serve } = self;
        tokio::spawn(serve);
        let held = Arc::new(Mutex::new(None));
        let retry = match file.publish(&path)? {
            Ok(published) => {
                announce(&file, &path);
                *held.lock().unwrap_or_else(|e| e.into_inner()) = Some(published);
                None
            }
            Err(keeper) => {
                tracing::warn!("{}", AdminFile::kept_by(&path, &keeper));
                Some(tokio::spawn(take_when_free(file, path, held.clone())))
            }
        };
        Ok(Advertised {
            _published: held,
            retry,
        })
    }
}

/// Tries every [`ADVERTISE_RETRY`] to take the admin file at `path` (its keeper gone), and
/// once taken leaves it in `held`.
async fn take_when_free(file: AdminFile, path: PathBuf, held: Arc<Mutex<Option<Published>>>) {
    loop {
        tokio::time::sleep(ADVERTISE_RETRY).await;
        let (trying, at) = (file.clone(), path.clone());
        let taken = tokio::task::spawn_blocking(move || trying.publish(&at)).await;
        if let Ok(Ok(Ok(published))) = taken {
            announce(&file, &path);
            *held.lock().unwrap_or_else(|e| e.into_inner()) = Some(published);
            return;
        }
    }
}

/// Says in the log where the admin endpoint and the console are.
fn announce(file: &AdminFile, path: &Path) {
    tracing::info!(
        "admin endpoint on {} (token in {})",
        file.url,
        path.display()
    );
    tracing::info!(
        "console on {}/console (`switchboard console` signs you in)",
        file.url
    );
}

/// The admin file as this gateway holds it, or waits to: dropped when the gateway stops,
/// it stops waiting and removes the file if it is this gateway's.
pub(crate) struct Advertised {
    _published: Arc<Mutex<Option<Published>>>,
    retry: Option<tokio::task::JoinHandle<()>>,
}

impl Drop for Advertised {
    fn drop(&mut self) {
        if let Some(retry) = &self.retry {
            retry.abort();
        }
    }
}
