//! What counts as pinned: an exact version (no range, no `latest`, no wildcard; for npm a
//! full `MAJOR.MINOR.PATCH`, since npm reads `1.2` as a range), an image
//! reference with a digest or a fixed tag, a package identifier that is a plain name of its
//! registry (not a path, URL or flag the installer would take for something else), from the
//! registry's default base URL.

/// The package registries' default base URLs.
pub(crate) const DEFAULT_BASES: [(&str, &[&str]); 2] = [
    ("npm", &["https://registry.npmjs.org"]),
    ("pypi", &["https://pypi.org", "https://pypi.org/simple"]),
];

/// Why `identifier` is not a plain name of its registry, if it is not.
pub(crate) fn identifier_problem(registry: &str, identifier: &str) -> Option<&'static str> {
    if identifier.is_empty() {
        return Some("the identifier is empty");
    }
    match registry {
        "npm" => {
            let bare = match identifier.strip_prefix('@') {
                Some(scoped) => match scoped.split_once('/') {
                    Some((scope, name)) if !scope.is_empty() => {
                        if !plain_npm(scope) {
                            return Some("not an npm package name");
                        }
                        name
                    }
                    _ => return Some("a scoped npm name needs '@scope/name'"),
                },
                None => identifier,
            };
            (!plain_npm(bare)).then_some("not an npm package name")
        }
        "pypi" => {
            let ok = identifier
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
                && identifier.starts_with(|c: char| c.is_ascii_alphanumeric());
            (!ok).then_some("not a PyPI project name")
        }
        _ => {
            let ok = !identifier.starts_with('-')
                && !identifier.contains("://")
                && identifier.chars().all(|c| c.is_ascii_graphic());
            (!ok).then_some("not an image reference")
        }
    }
}

fn plain_npm(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with(['.', '_', '-'])
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | '~'))
}

/// Why `version` is not exact, if it is not.
pub fn inexact_reason(version: &str) -> Option<&'static str> {
    let version = version.trim();
    if version.is_empty() {
        return Some("it is missing");
    }
    if version.eq_ignore_ascii_case("latest") {
        return Some("'latest' moves");
    }
    if version.contains(['^', '~', '*', '>', '<', '=', '|', ',']) {
        return Some("it is a range");
    }
    if version.chars().any(char::is_whitespace) {
        return Some("it contains spaces");
    }
    if version
        .split(['.', '-'])
        .any(|part| part.eq_ignore_ascii_case("x"))
    {
        return Some("it has a wildcard part");
    }
    let number = version.strip_prefix('v').unwrap_or(version);
    if !number.starts_with(|c: char| c.is_ascii_digit()) {
        return Some("it is not a version number");
    }
    // What npm or pip would read as something else: `owner/repo` (a GitHub repository), a
    // path, a URL, a git reference.
    if !version
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '+' | '!' | '_'))
    {
        return Some("it holds characters no version number has (a path, a URL or a repository?)");
    }
    let lower = version.to_ascii_lowercase();
    if [".tgz", ".tar", ".gz", ".zip", ".whl"]
        .iter()
        .any(|archive| lower.ends_with(archive))
    {
        return Some("it names an archive file");
    }
    None
}

/// Why `version` is not an exact npm version, if it is not: [`inexact_reason`], and then
/// nothing but a full semver `MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD]` (an optional leading
/// `v`, as npm takes it). npm reads `1` or `1.2` as a range (`1.x`, `1.2.x`), and anything
/// that is neither a version nor a range (`1.2.3.4`, `0.6.2.post1`) as a dist-tag, which moves.
pub(crate) fn npm_inexact_reason(version: &str) -> Option<&'static str> {
    if let Some(reason) = inexact_reason(version) {
        return Some(reason);
    }
    let version = version.trim();
    let version = version.strip_prefix('v').unwrap_or(version);
    let (rest, build) = match version.split_once('+') {
        Some((rest, build)) => (rest, Some(build)),
        None => (version, None),
    };
    let (core, pre) = match rest.split_once('-') {
        Some((core, pre)) => (core, Some(pre)),
        None => (rest, None),
    };
    let parts: Vec<&str> = core.split('.').collect();
    if parts.len() != 3 || !parts.iter().all(|part| semver_number(part)) {
        return Some("npm takes it as a range or a tag: only MAJOR.MINOR.PATCH is exact");
    }
    if pre.is_some_and(|pre| !semver_identifiers(pre, true)) {
        return Some("its pre-release part is not dot-separated [0-9A-Za-z-] identifiers");
    }
    if build.is_some_and(|build| !semver_identifiers(build, false)) {
        return Some("its build part is not dot-separated [0-9A-Za-z-] identifiers");
    }
    None
}

/// A semver numeric identifier: digits, without a leading zero unless it is `0`.
fn semver_number(part: &str) -> bool {
    !part.is_empty()
        && part.chars().all(|c| c.is_ascii_digit())
        && (part == "0" || !part.starts_with('0'))
}

/// Dot-separated non-empty identifiers of `[0-9A-Za-z-]`; numeric ones of a pre-release
/// (`numbers_strict`) without a leading zero.
fn semver_identifiers(text: &str, numbers_strict: bool) -> bool {
    text.split('.').all(|identifier| {
        !identifier.is_empty()
            && identifier
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-')
            && (!numbers_strict
                || !identifier.chars().all(|c| c.is_ascii_digit())
                || semver_number(identifier))
    })
}

/// The image reference to pull: `identifier` must carry a digest or a tag other than
/// `latest`; an untagged identifier takes the package's exact `version` as its tag (the
/// older schema kept them apart). `Err((version, reason))` otherwise.
pub(crate) fn oci_image(
    identifier: &str,
    version: Option<&str>,
) -> Result<String, (String, &'static str)> {
    if identifier.contains("@sha256:") {
        return Ok(identifier.to_owned());
    }
    let last = identifier.rsplit('/').next().unwrap_or(identifier);
    if let Some((_, tag)) = last.split_once(':') {
        return if tag.eq_ignore_ascii_case("latest") || tag.is_empty() {
            Err((
                tag.to_owned(),
                "an image tag must be a digest or a fixed tag, not 'latest'",
            ))
        } else {
            Ok(identifier.to_owned())
        };
    }
    match version {
        Some(version) if inexact_reason(version).is_none() => Ok(format!("{identifier}:{version}")),
        Some(version) => Err((
            version.to_owned(),
            "the image has no digest or tag and its version is not exact",
        )),
        None => Err((String::new(), "the image has no @sha256: digest and no tag")),
    }
}
