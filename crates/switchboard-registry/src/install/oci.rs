//! OCI images: `docker pull IMAGE` once a Docker engine answers (`docker info`); the command
//! is then `docker run -i --rm … IMAGE …`.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::process::{Step, missing_program, on_path};
use super::{InstallError, ProgressFn, Settings};

/// How long `docker info` may take to say whether an engine answers.
const INFO_DEADLINE: Duration = Duration::from_secs(20);

/// Pulls `image` once an engine is known to answer.
pub(crate) async fn pull(
    image: &str,
    settings: &Settings,
    cancel: &CancellationToken,
    progress: ProgressFn<'_>,
) -> Result<(), InstallError> {
    let env = &settings.env;
    if !on_path("docker", env) {
        return Err(InstallError::Unavailable(missing_program("docker")));
    }
    progress(5, "docker info");
    let info_deadline = INFO_DEADLINE.min(settings.deadline);
    let info = Step {
        program: "docker",
        args: vec!["info".into()],
        env,
        deadline: info_deadline,
    };
    match info.run(cancel).await {
        Ok(_) => {}
        Err(InstallError::Failed { output, .. }) => {
            let last = output.lines().last().unwrap_or("").trim().to_owned();
            return Err(InstallError::Unavailable(if last.is_empty() {
                "docker is installed but no engine answers".to_owned()
            } else {
                format!("docker is installed but no engine answers: {last}")
            }));
        }
        Err(InstallError::TimedOut { .. }) => {
            return Err(InstallError::Unavailable(format!(
                "docker is installed but its engine did not answer `docker info` within {} s",
                info_deadline.as_secs()
            )));
        }
        Err(other) => return Err(other),
    }
    progress(20, &format!("docker pull {image}"));
    Step {
        program: "docker",
        args: vec!["pull".into(), image.to_owned()],
        env,
        deadline: settings.deadline,
    }
    .run(cancel)
    .await?;
    Ok(())
}
