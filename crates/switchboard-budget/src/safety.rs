//! What a tool's side effects allow: read-only, destructive, idempotent — from its MCP
//! annotations, its declared latency metadata (`idempotent`) and the operator's overrides (which
//! win). Absent hints take the protocol's conservative defaults: `readOnlyHint` absent ⇒ not
//! read-only; `destructiveHint` absent ⇒ destructive (unless read-only); `idempotentHint`
//! absent ⇒ not idempotent (unless read-only). An operator's `destructive` or `idempotent`
//! holds even for a tool that calls itself read-only; an operator's `destructive` also
//! unsays the tool's read-only claim, so neither idempotence nor caching follows from it.
//!
//! Retries and hedging need [`ToolSafety::idempotent`]; automatic probes need
//! [`ToolSafety::probe_verdict`] to be [`ProbeVerdict::Eligible`].

use switchboard_core::ToolAnnotations;

use crate::effective::Declared;

/// The operator's word on a tool, over anything the tool says.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SafetyOverride {
    pub read_only: Option<bool>,
    pub destructive: Option<bool>,
    pub idempotent: Option<bool>,
    /// `Some(false)`: never probe this tool, whatever it is.
    pub probe: Option<bool>,
}

/// Why a tool may or may not be probed automatically.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeVerdict {
    Eligible,
    /// Destructive: never probed.
    Destructive,
    /// Neither read-only nor idempotent.
    NotIdempotent,
    /// The operator said never.
    DisabledByOperator,
}

/// A tool's effective side-effect classification.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolSafety {
    pub read_only: bool,
    pub destructive: bool,
    pub idempotent: bool,
    probe_disabled: bool,
}

impl ToolSafety {
    /// Resolves annotations, declared metadata and overrides (see the module doc).
    pub fn resolve(
        annotations: Option<&ToolAnnotations>,
        declared: &Declared,
        overrides: &SafetyOverride,
    ) -> Self {
        // An operator who says destructive does not believe the tool's read-only claim (unless
        // they say read-only too): nothing is derived from it — not idempotence (retries,
        // hedges), not caching.
        let claimed = annotations
            .and_then(|a| a.read_only_hint)
            .filter(|_| overrides.destructive != Some(true));
        let read_only = overrides.read_only.or(claimed).unwrap_or(false);
        // The operator's word is taken as given; only what the tool says gives way to
        // read-only (a read-only tool destroys nothing and may be repeated).
        let destructive = overrides.destructive.unwrap_or_else(|| {
            !read_only && annotations.and_then(|a| a.destructive_hint).unwrap_or(true)
        });
        let idempotent = overrides.idempotent.unwrap_or_else(|| {
            read_only
                || annotations
                    .and_then(|a| a.idempotent_hint)
                    .or(declared.idempotent)
                    .unwrap_or(false)
        });
        Self {
            read_only,
            destructive,
            idempotent,
            probe_disabled: overrides.probe == Some(false),
        }
    }

    /// Whether automatic probes may call the tool: read-only or idempotent, and never
    /// destructive.
    pub fn probe_verdict(&self) -> ProbeVerdict {
        if self.probe_disabled {
            ProbeVerdict::DisabledByOperator
        } else if self.destructive {
            ProbeVerdict::Destructive
        } else if !(self.read_only || self.idempotent) {
            ProbeVerdict::NotIdempotent
        } else {
            ProbeVerdict::Eligible
        }
    }
}

/// The tools automatic probes may call, in input order.
pub fn probe_targets<'a>(tools: impl IntoIterator<Item = (&'a str, ToolSafety)>) -> Vec<&'a str> {
    tools
        .into_iter()
        .filter(|(_, safety)| safety.probe_verdict() == ProbeVerdict::Eligible)
        .map(|(name, _)| name)
        .collect()
}

#[cfg(test)]
#[path = "safety_tests.rs"]
mod tests;
