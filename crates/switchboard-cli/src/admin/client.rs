//! The operator side of the admin endpoint.

use std::path::Path;

use anyhow::{Context, bail};
use serde_json::{Value, json};

use super::{AdminFile, admin_path};

/// A connection to a running gateway's admin endpoint.
pub struct AdminClient {
    file: AdminFile,
    http: reqwest::Client,
}

impl AdminClient {
    pub fn open(explicit: Option<&Path>) -> anyhow::Result<Self> {
        let file = AdminFile::read(&admin_path(explicit)?)?;
        let http = reqwest::Client::builder()
            .no_proxy()
            .build()
            .context("cannot build an HTTP client")?;
        Ok(Self { file, http })
    }

    async fn send(&self, request: reqwest::RequestBuilder) -> anyhow::Result<Value> {
        let response = request
            .bearer_auth(&self.file.token)
            .send()
            .await
            .with_context(|| {
                format!(
                    "cannot reach the gateway at {} (is it still running?)",
                    self.file.url
                )
            })?;
        let status = response.status();
        let text = response.text().await.unwrap_or_default();
        if !status.is_success() {
            bail!("the gateway answered {status}: {text}");
        }
        serde_json::from_str(&text).context("the gateway's answer is not JSON")
    }

    pub async fn set_tier(
        &self,
        session: Option<&str>,
        agent: Option<&str>,
        tier: Option<&str>,
    ) -> anyhow::Result<Value> {
        let body = json!({"session": session, "agent": agent, "tier": tier});
        self.send(
            self.http
                .post(format!("{}/tier", self.file.url))
                .json(&body),
        )
        .await
    }

    pub async fn approvals(&self) -> anyhow::Result<Value> {
        self.send(self.http.get(format!("{}/approvals", self.file.url)))
            .await
    }

    pub async fn answer(
        &self,
        id: &str,
        approve: bool,
        reason: Option<&str>,
        by: &str,
    ) -> anyhow::Result<Value> {
        let body = json!({"approve": approve, "reason": reason, "by": by});
        self.send(
            self.http
                .post(format!("{}/approvals/{id}", self.file.url))
                .json(&body),
        )
        .await
    }
}
