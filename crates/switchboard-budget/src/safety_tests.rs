//! Tests of side-effect classification and probe eligibility.

use super::*;

const CHOICES: [Option<bool>; 3] = [None, Some(false), Some(true)];

fn annotations(
    read_only: Option<bool>,
    destructive: Option<bool>,
    idempotent: Option<bool>,
) -> ToolAnnotations {
    ToolAnnotations {
        read_only_hint: read_only,
        destructive_hint: destructive,
        idempotent_hint: idempotent,
        ..ToolAnnotations::default()
    }
}

#[test]
fn absent_hints_take_the_conservative_defaults() {
    let none = ToolSafety::resolve(None, &Declared::default(), &SafetyOverride::default());
    assert!(!none.read_only && none.destructive && !none.idempotent);
    assert_eq!(none.probe_verdict(), ProbeVerdict::Destructive);

    let read_only = annotations(Some(true), None, None);
    let safety = ToolSafety::resolve(
        Some(&read_only),
        &Declared::default(),
        &SafetyOverride::default(),
    );
    assert!(safety.read_only && !safety.destructive && safety.idempotent);
    assert_eq!(safety.probe_verdict(), ProbeVerdict::Eligible);

    // Idempotent but destructiveHint absent: destructive, never probed.
    let idempotent = annotations(None, None, Some(true));
    let safety = ToolSafety::resolve(
        Some(&idempotent),
        &Declared::default(),
        &SafetyOverride::default(),
    );
    assert!(safety.idempotent);
    assert_eq!(safety.probe_verdict(), ProbeVerdict::Destructive);

    // Declared `_meta` idempotence counts; an explicit non-destructive hint opens probing.
    let declared = Declared {
        idempotent: Some(true),
        ..Declared::default()
    };
    let open = annotations(None, Some(false), None);
    let safety = ToolSafety::resolve(Some(&open), &declared, &SafetyOverride::default());
    assert_eq!(safety.probe_verdict(), ProbeVerdict::Eligible);
    let safety = ToolSafety::resolve(
        Some(&open),
        &Declared::default(),
        &SafetyOverride::default(),
    );
    assert_eq!(safety.probe_verdict(), ProbeVerdict::NotIdempotent);
}

#[test]
fn operator_overrides_win() {
    let read_only = annotations(Some(true), None, None);
    let never = SafetyOverride {
        probe: Some(false),
        ..SafetyOverride::default()
    };
    let safety = ToolSafety::resolve(Some(&read_only), &Declared::default(), &never);
    assert_eq!(safety.probe_verdict(), ProbeVerdict::DisabledByOperator);

    // The operator knows a "read-only" tool deletes things.
    let actually_destructive = SafetyOverride {
        read_only: Some(false),
        ..SafetyOverride::default()
    };
    let safety = ToolSafety::resolve(
        Some(&read_only),
        &Declared::default(),
        &actually_destructive,
    );
    assert_eq!(safety.probe_verdict(), ProbeVerdict::Destructive);

    // Or says only that it is not to be repeated, or destroys: the tool's readOnlyHint does
    // not outweigh it.
    let not_repeatable = SafetyOverride {
        idempotent: Some(false),
        ..SafetyOverride::default()
    };
    let safety = ToolSafety::resolve(Some(&read_only), &Declared::default(), &not_repeatable);
    assert!(safety.read_only && !safety.idempotent, "{safety:?}");
    let destroys = SafetyOverride {
        destructive: Some(true),
        ..SafetyOverride::default()
    };
    let safety = ToolSafety::resolve(Some(&read_only), &Declared::default(), &destroys);
    assert!(safety.destructive, "{safety:?}");
    assert_eq!(safety.probe_verdict(), ProbeVerdict::Destructive);
    // Nothing is derived from the claim the operator does not believe: not retried or
    // hedged (idempotent), not cached (read-only).
    assert!(!safety.read_only && !safety.idempotent, "{safety:?}");
}

#[test]
fn probes_never_pick_a_destructive_tool() {
    // Every combination of hints, declared idempotence and overrides.
    let mut tools = Vec::new();
    for hints in CHOICES.iter().flat_map(|r| {
        CHOICES
            .iter()
            .flat_map(move |d| CHOICES.iter().map(move |i| (*r, *d, *i)))
    }) {
        for declared_idempotent in CHOICES {
            for overrides in CHOICES.iter().flat_map(|r| {
                CHOICES
                    .iter()
                    .flat_map(move |d| CHOICES.iter().map(move |i| (*r, *d, *i)))
            }) {
                let annotations = annotations(hints.0, hints.1, hints.2);
                let declared = Declared {
                    idempotent: declared_idempotent,
                    ..Declared::default()
                };
                let overrides = SafetyOverride {
                    read_only: overrides.0,
                    destructive: overrides.1,
                    idempotent: overrides.2,
                    probe: None,
                };
                tools.push((annotations, declared, overrides));
            }
        }
    }
    let classified: Vec<(String, ToolSafety)> = tools
        .iter()
        .enumerate()
        .map(|(i, (a, d, o))| (format!("tool-{i}"), ToolSafety::resolve(Some(a), d, o)))
        .collect();
    let targets = probe_targets(
        classified
            .iter()
            .map(|(name, safety)| (name.as_str(), *safety)),
    );
    assert!(!targets.is_empty(), "some tools are probeable");
    assert!(targets.len() < classified.len(), "some are not");
    for (name, safety) in &classified {
        let picked = targets.contains(&name.as_str());
        if safety.destructive {
            assert!(!picked, "{name} is destructive but was picked");
        }
        if picked {
            assert!(safety.read_only || safety.idempotent);
        }
    }
    // Independently of ToolSafety: whatever wins for readOnly/destructive, a tool that ends up
    // not read-only with destructive absent or true must never be picked.
    for ((annotations, _, overrides), (name, _)) in tools.iter().zip(&classified) {
        let read_only = overrides
            .read_only
            .or(annotations.read_only_hint)
            .unwrap_or(false);
        let destructive = overrides
            .destructive
            .or(annotations.destructive_hint)
            .unwrap_or(true);
        if !read_only && destructive {
            assert!(!targets.contains(&name.as_str()), "{name}");
        }
    }
}
