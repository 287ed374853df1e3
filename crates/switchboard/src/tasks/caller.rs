//! The caller a gateway-run task's call sees. Nobody waits on the other end of a task, so
//! what the upstream asks mid-call (elicitation, sampling, roots) — and the approver's
//! question — is parked on the task: it says `input_required` with the questions, and the
//! answers come back by `tasks/update` (2026-07-28) or over the stream of `tasks/result`
//! (2025-11-25). An approval waiting for an operator shows as `input_required` too.

use std::fmt;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::{Value, json};
use switchboard_core::CallerError;
use switchboard_core::context::CallerChannel;
use switchboard_core::task::TaskStatus;

use super::store::Task;

pub(crate) struct TaskCaller {
    pub(crate) task: Arc<Task>,
    /// The requests of `CLIENT_REQUEST_METHODS` the client declared it can answer.
    pub(crate) supported: Vec<&'static str>,
    /// Told when the server makes the call a task of its own.
    pub(crate) created: std::sync::Mutex<Option<tokio::sync::oneshot::Sender<()>>>,
    /// The client speaks 2026-07-28, where `input_required` means questions to answer.
    pub(crate) modern_client: bool,
}

impl fmt::Debug for TaskCaller {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskCaller")
            .field("task", &self.task.id)
            .finish()
    }
}

/// Withdraws a question whose asker stopped waiting.
struct Question<'a> {
    task: &'a Task,
    key: String,
}

impl Drop for Question<'_> {
    fn drop(&mut self) {
        self.task.withdraw(&self.key);
    }
}

impl CallerChannel for TaskCaller {
    fn supports(&self, method: &str) -> bool {
        self.supported.contains(&method)
    }

    fn request(&self, method: &str, params: Value) -> BoxFuture<'_, Result<Value, CallerError>> {
        // The server's own task id stays with the gateway (the gateway's task is the client's).
        let mut params = params;
        if let Some(meta) = params.get_mut("_meta").and_then(Value::as_object_mut) {
            meta.remove(switchboard_core::task::RELATED_TASK_META);
        }
        let request = json!({"method": method, "params": params});
        Box::pin(async move {
            let (key, answer) = self.task.ask(request);
            let _question = Question {
                task: &self.task,
                key,
            };
            tokio::select! {
                answer = answer => answer.unwrap_or_else(|_| Err(CallerError {
                    code: -32603,
                    message: "the question was withdrawn".to_owned(),
                    data: None,
                })),
                () = self.task.cancel.cancelled() => Err(CallerError {
                    code: -32800,
                    message: "the task was cancelled".to_owned(),
                    data: None,
                }),
            }
        })
    }

    /// Log messages of a task's call have no client to go to; they stay in the gateway's log.
    fn notify(&self, method: &str, params: Value) {
        tracing::debug!(target: "switchboard::tasks", task = %self.task.id, %method, %params, "not relayed");
    }

    fn is_task(&self) -> bool {
        true
    }

    fn task_created(&self) {
        let created = self
            .created
            .lock()
            .ok()
            .and_then(|mut created| created.take());
        if let Some(created) = created {
            let _ = created.send(());
        }
    }

    /// A 2025-11-25 client sees the task `input_required` while an operator decides; a
    /// 2026-07-28 one, for which `input_required` means questions it must answer, sees it
    /// `working` with the wait in the status message.
    fn waiting_on(&self, what: Option<&str>) {
        let status = if self.modern_client {
            TaskStatus::Working
        } else {
            TaskStatus::InputRequired
        };
        match what {
            Some(what) => self.task.set_status(status, Some(what.to_owned())),
            None if self.task.open_questions().is_empty() => {
                self.task.set_status(TaskStatus::Working, None);
            }
            None => {}
        }
    }
}
