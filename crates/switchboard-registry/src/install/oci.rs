//! OCI images: `docker pull IMAGE` once a Docker engine answers (`docker info`); the command
//! is then `docker run -i --rm … IMAGE …`.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::process::{Step, missing_program, on_path};
use super::{InstallError, ProgressFn};

/// How long `docker info` may take to say whether an engine answers.
const INFO_DEADLINE: Duration = Duration::from_secs(20);

/// Pulls `image` once an engine is known to answer.
pub(crate) async fn pull(
    image: &str,
    env: &[(String, String)],
    cancel: &CancellationToken,
    progress: ProgressFn<'_>,
) -> Result<(), InstallError> {
    if !on_path("docker", env) {
        return Err(InstallError::Unavailable(missing_program("docker")));
    }
    progress(5, "docker info");
    let info = Step {
        program: "docker",
        args: vec!["info".into()],
        env,
        deadline: Some(INFO_DEADLINE),
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
        Err(other) => return Err(other),
    }
    progress(20, &format!("docker pull {image}"));
    Step {
        program: "docker",
        args: vec!["pull".into(), image.to_owned()],
        env,
        deadline: None,
    }
    .run(cancel)
    .await?;
    Ok(())
}
