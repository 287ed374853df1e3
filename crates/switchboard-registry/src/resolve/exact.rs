//! What counts as pinned: an exact version (no range, no `latest`, no wildcard), an image
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
