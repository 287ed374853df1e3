//! `${VAR}`, `${VAR:-default}` and `$$` in config strings, through an injected environment.

use std::collections::BTreeMap;

/// Where variables come from.
pub trait Environment {
    fn var(&self, name: &str) -> Option<String>;
}

/// The process environment.
#[derive(Debug, Default, Clone, Copy)]
pub struct ProcessEnvironment;

impl Environment for ProcessEnvironment {
    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok()
    }
}

/// A fixed map of variables (tests, embedding).
#[derive(Debug, Default, Clone)]
pub struct MapEnvironment(pub BTreeMap<String, String>);

impl Environment for MapEnvironment {
    fn var(&self, name: &str) -> Option<String> {
        self.0.get(name).cloned()
    }
}

/// Why a substitution failed, and at which byte offset of the string (the `$` of the reference).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubstitutionError {
    pub offset: usize,
    pub message: String,
    pub hint: Option<String>,
}

/// Expands every reference in `text`.
pub fn substitute(text: &str, env: &dyn Environment) -> Result<String, SubstitutionError> {
    if !text.contains('$') {
        return Ok(text.to_owned());
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let mut offset = 0;
    while let Some(index) = rest.find('$') {
        out.push_str(&rest[..index]);
        let after = &rest[index + 1..];
        let here = offset + index;
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            offset += rest[..index].len() + 2;
            rest = tail;
            continue;
        }
        let Some(body) = after.strip_prefix('{') else {
            out.push('$');
            offset += rest[..index].len() + 1;
            rest = after;
            continue;
        };
        let Some(end) = body.find('}') else {
            return Err(SubstitutionError {
                offset: here,
                message: "unclosed '${' in string".to_owned(),
                hint: Some("write ${NAME}, or $$ for a literal $".to_owned()),
            });
        };
        let reference = &body[..end];
        let (name, default) = match reference.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (reference, None),
        };
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(SubstitutionError {
                offset: here,
                message: format!("'${{{reference}}}' is not a valid variable reference"),
                hint: Some(
                    "names are letters, digits and _; write ${NAME} or ${NAME:-default}".to_owned(),
                ),
            });
        }
        match (env.var(name), default) {
            (Some(value), _) => out.push_str(&value),
            (None, Some(default)) => out.push_str(default),
            (None, None) => {
                return Err(SubstitutionError {
                    offset: here,
                    message: format!("environment variable {name} is not set"),
                    hint: Some(format!("set {name}, or give a default: ${{{name}:-value}}")),
                });
            }
        }
        let consumed = rest[..index].len() + 2 + end + 1;
        offset += consumed;
        rest = &rest[consumed..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env() -> MapEnvironment {
        MapEnvironment(BTreeMap::from([
            ("HOME".into(), "/home/a".into()),
            ("EMPTY".into(), String::new()),
        ]))
    }

    #[test]
    fn expands_references() {
        let cases = [
            ("plain", "plain"),
            ("${HOME}/x", "/home/a/x"),
            ("${MISSING:-fallback}", "fallback"),
            ("${HOME:-x}", "/home/a"),
            ("[${EMPTY}]", "[]"),
            ("cost $$5 and $HOME", "cost $5 and $HOME"),
            ("${A:-}", ""),
        ];
        for (input, expected) in cases {
            assert_eq!(substitute(input, &env()).expect(input), expected, "{input}");
        }
    }

    #[test]
    fn explains_failures_with_offsets() {
        let missing = substitute("ab ${NOPE}", &env()).expect_err("unset");
        assert_eq!(missing.offset, 3);
        assert!(missing.message.contains("NOPE"));
        assert!(substitute("${bad name}", &env()).is_err());
        assert!(substitute("${HOME", &env()).is_err());
    }
}
