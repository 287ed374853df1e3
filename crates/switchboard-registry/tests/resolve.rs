//! `resolve`: which package or remote is chosen, exact versions only, what becomes an input
//! and what a fixed value, how arguments become argv, and what the preview shows.

use std::collections::BTreeMap;

use serde_json::{Value, json};
use switchboard_registry::{Choice, Input, RemoteKind, ResolveError, ServerJson, resolve};

fn server(packages: Value, remotes: Value) -> ServerJson {
    serde_json::from_value(json!({
        "name": "io.github.example/memory",
        "description": "Remembers things",
        "version": "1.2.0",
        "packages": packages,
        "remotes": remotes,
        "someFutureField": {"ignored": true}
    }))
    .expect("a valid server.json")
}

fn npm(version: &str) -> Value {
    json!({
        "registryType": "npm",
        "identifier": "@modelcontextprotocol/server-memory",
        "version": version,
        "transport": {"type": "stdio"},
        "runtimeHint": "npx",
        "runtimeArguments": [{"type": "named", "name": "-y"}],
        "packageArguments": [
            {"type": "positional", "value": "serve"},
            {"type": "named", "name": "--port", "default": "8080"},
            {"type": "named", "name": "verbose"},
            {"type": "named", "name": "--config", "valueHint": "path"}
        ],
        "environmentVariables": [
            {"name": "MEMORY_FILE", "value": "/tmp/memory.json"},
            {"name": "API_KEY", "isRequired": true, "isSecret": true, "description": "the key"},
            {"name": "MODE", "default": "fast", "choices": ["fast", "slow"], "format": "string"}
        ]
    })
}

#[test]
fn npm_stdio_is_preferred_and_carries_args_env_and_inputs() {
    let pypi = json!({"registryType": "pypi", "identifier": "mem", "version": "1.0.0",
                      "transport": {"type": "stdio"}});
    let remote = json!([{"type": "streamable-http", "url": "https://example.com/mcp"}]);
    let resolution = resolve(&server(json!([pypi, npm("2026.1.26")]), remote)).expect("resolves");
    assert_eq!(resolution.name, "io.github.example/memory");
    assert_eq!(resolution.version, "1.2.0");
    let Choice::Npm {
        package,
        version,
        runtime_args,
        package_args,
        env,
    } = &resolution.choice
    else {
        panic!("expected npm, got {:?}", resolution.choice);
    };
    assert_eq!(package, "@modelcontextprotocol/server-memory");
    assert_eq!(version, "2026.1.26");
    assert_eq!(runtime_args, &["-y"]);
    assert_eq!(package_args, &["serve", "--port", "8080", "--verbose"]);
    assert_eq!(
        env,
        &BTreeMap::from([("MEMORY_FILE".to_owned(), "/tmp/memory.json".to_owned())])
    );
    assert_eq!(
        resolution.inputs,
        vec![
            Input {
                name: "API_KEY".into(),
                description: Some("the key".into()),
                required: true,
                secret: true,
                default: None,
                choices: vec![],
                format: None,
            },
            Input {
                name: "MODE".into(),
                description: None,
                required: false,
                secret: false,
                default: Some("fast".into()),
                choices: vec!["fast".into(), "slow".into()],
                format: Some("string".into()),
            },
        ]
    );
    let preview = &resolution.preview;
    assert!(
        preview.starts_with(
            "npm install --prefix <dir> @modelcontextprotocol/server-memory@2026.1.26, then <dir>/node_modules/.bin/"
        ),
        "{preview}"
    );
    assert!(preview.contains("serve --port 8080 --verbose"), "{preview}");
    assert!(
        preview.contains("MEMORY_FILE=/tmp/memory.json"),
        "{preview}"
    );
    assert!(preview.contains("API_KEY (required, secret)"), "{preview}");
}

#[test]
fn pypi_is_chosen_over_oci_and_a_non_stdio_package_is_skipped() {
    let http_npm = json!({"registryType": "npm", "identifier": "x", "version": "1.0.0",
                          "transport": {"type": "streamable-http", "url": "http://localhost:3000"}});
    let oci = json!({"registryType": "oci", "identifier": "ghcr.io/a/b:1.0.0",
                     "transport": {"type": "stdio"}});
    let pypi = json!({"registryType": "pypi", "identifier": "mcp-server-time", "version": "0.6.2",
                      "transport": {"type": "stdio"},
                      "packageArguments": [{"type": "named", "name": "--local-timezone", "value": "UTC"}]});
    let resolution = resolve(&server(json!([http_npm, oci, pypi]), json!([]))).expect("resolves");
    assert_eq!(
        resolution.choice,
        Choice::Pypi {
            package: "mcp-server-time".into(),
            version: "0.6.2".into(),
            package_args: vec!["--local-timezone".into(), "UTC".into()],
            env: BTreeMap::new(),
        }
    );
    assert!(
        resolution
            .preview
            .contains("pip install mcp-server-time==0.6.2"),
        "{}",
        resolution.preview
    );
}

#[test]
fn oci_needs_a_digest_or_a_fixed_tag() {
    let oci = |identifier: &str, version: Option<&str>| {
        let mut package = json!({"registryType": "oci", "identifier": identifier,
                                 "transport": {"type": "stdio"},
                                 "runtimeArguments": [{"type": "named", "name": "--network", "value": "none"}],
                                 "environmentVariables": [{"name": "TOKEN", "isSecret": true}]});
        if let Some(version) = version {
            package["version"] = json!(version);
        }
        resolve(&server(json!([package]), json!([])))
    };
    let digest = "ghcr.io/example/server@sha256:0123abcd";
    let resolution = oci(digest, None).expect("a digest is exact");
    let Choice::Oci {
        image,
        runtime_args,
        ..
    } = &resolution.choice
    else {
        panic!("expected oci");
    };
    assert_eq!(image, digest);
    assert_eq!(runtime_args, &["--network", "none"]);
    assert_eq!(resolution.inputs[0].name, "TOKEN");
    assert!(
        resolution.preview.contains(&format!(
            "docker run -i --rm -e TOKEN --network none {digest}"
        )),
        "{}",
        resolution.preview
    );
    assert!(oci("docker.io/mcp/time:1.0.3", None).is_ok());
    assert!(oci("localhost:5000/mcp/time:1.0.3", None).is_ok());
    // An untagged image takes the package's exact version as its tag.
    let Choice::Oci { image, .. } = oci("mcp/time", Some("1.0.3")).expect("tagged").choice else {
        panic!("expected oci");
    };
    assert_eq!(image, "mcp/time:1.0.3");
    // Nothing may widen the container or steer the docker client.
    let widened = |arguments: serde_json::Value, variables: serde_json::Value| {
        resolve(&server(
            json!([{"registryType": "oci", "identifier": digest, "transport": {"type": "stdio"},
                    "runtimeArguments": arguments, "environmentVariables": variables}]),
            json!([]),
        ))
    };
    for flag in ["--privileged", "-v", "--pid=host", "--network=host"] {
        let error = widened(
            json!([{"type": "named", "name": flag, "value": "/:/host"}]),
            json!([]),
        )
        .expect_err(flag)
        .to_string();
        assert!(error.contains("is not allowed"), "{flag}: {error}");
    }
    let error = widened(
        json!([]),
        json!([{"name": "DOCKER_HOST", "value": "tcp://evil"}]),
    )
    .expect_err("DOCKER_HOST")
    .to_string();
    assert!(error.contains("steer the docker client"), "{error}");
    for bad in ["mcp/time:latest", "mcp/time", "localhost:5000/mcp/time"] {
        let error = oci(bad, None).expect_err(bad);
        assert!(
            matches!(error, ResolveError::InexactVersion { .. }),
            "{bad}: {error}"
        );
    }
    assert!(matches!(
        oci("--privileged", None),
        Err(ResolveError::BadIdentifier { .. })
    ));
}

#[test]
fn remotes_keep_url_templates_and_ask_for_unfixed_headers() {
    let remotes = json!([
        {"type": "websocket", "url": "wss://example.com"},
        {"type": "sse", "url": "https://{tenant}.example.com/sse",
         "headers": [{"name": "X-Fixed", "value": "yes"},
                     {"name": "Authorization", "isRequired": true, "isSecret": true}]}
    ]);
    let nuget = json!({"registryType": "nuget", "identifier": "X", "version": "1.0.0",
                       "transport": {"type": "stdio"}});
    let resolution = resolve(&server(json!([nuget]), remotes)).expect("resolves");
    assert_eq!(
        resolution.choice,
        Choice::Remote {
            transport: RemoteKind::Sse,
            url: "https://{tenant}.example.com/sse".into(),
            headers: BTreeMap::from([("X-Fixed".to_owned(), "yes".to_owned())]),
        }
    );
    assert_eq!(resolution.inputs.len(), 1);
    assert_eq!(resolution.inputs[0].name, "Authorization");
    assert!(resolution.inputs[0].secret && resolution.inputs[0].required);
    assert!(
        resolution
            .preview
            .starts_with("connect to https://{tenant}.example.com/sse (SSE)")
    );

    let http = resolve(&server(
        json!([]),
        json!([{"type": "streamable-http", "url": "https://example.com/mcp"}]),
    ))
    .expect("resolves");
    assert!(matches!(
        http.choice,
        Choice::Remote {
            transport: RemoteKind::Http,
            ..
        }
    ));
}

#[test]
fn remotes_on_the_machines_own_link_local_services_are_refused() {
    for url in [
        "http://169.254.169.254/latest/meta-data/",
        "http://[fe80::1]:8080/mcp",
        "http://metadata.google.internal/computeMetadata/v1/",
        "http://user@0.0.0.0:9000/mcp",
    ] {
        let refused = resolve(&server(
            json!([]),
            json!([{"type": "streamable-http", "url": url}]),
        ));
        assert!(
            matches!(refused, Err(ResolveError::UnsafeRemote { .. })),
            "{url}: {refused:?}"
        );
    }
    for url in ["https://api.example.com/mcp", "http://127.0.0.1:3000/mcp"] {
        let resolved = resolve(&server(json!([]), json!([{"type": "sse", "url": url}])));
        assert!(resolved.is_ok(), "{url}: {resolved:?}");
    }
}

#[test]
fn nothing_runnable_lists_what_is_offered() {
    let nuget = json!({"registryType": "nuget", "identifier": "Some.Server", "version": "1.0.0",
                       "transport": {"type": "stdio"}});
    let error = resolve(&server(
        json!([nuget]),
        json!([{"type": "websocket", "url": "wss://x"}]),
    ))
    .expect_err("unsupported");
    let ResolveError::Unsupported { offers, .. } = &error else {
        panic!("expected Unsupported, got {error}");
    };
    assert_eq!(
        offers,
        &[
            "nuget package Some.Server (stdio)",
            "websocket remote wss://x"
        ]
    );
    let text = error.to_string();
    assert!(text.contains("io.github.example/memory"), "{text}");
    let empty = resolve(&server(json!([]), json!([]))).expect_err("nothing");
    assert!(
        empty.to_string().contains("no packages and no remotes"),
        "{empty}"
    );
}

#[test]
fn inexact_versions_are_refused_naming_the_package() {
    for version in [
        "",
        "latest",
        "^1.2.0",
        "~1.2",
        "1.x",
        "1.2.X",
        "*",
        ">=1.0",
        "<2",
        "=1.0.0",
        "1.0 || 2.0",
        "1.0.0 - 2.0.0",
        ">=1,<2",
        // npm would read these as a GitHub repository, a path, a URL or a tarball.
        "vattacker/repo",
        "vattacker",
        "1.0.0/../../../tmp/x",
        "1.0.0.tgz",
        "1.0.0#main",
        "1.0.0:x",
        "1.0.0@x",
        // npm reads a partial version as a range (`1.x`, `1.2.x`), anything else as a tag.
        "1",
        "1.2",
        "v1.2",
        "1.2.3.4",
        "0.6.2.post1",
        "01.2.3",
        "1.2.3-",
        "1.2.3-01",
        "1.2.3+",
        "1.2.3-rc..1",
    ] {
        let error = resolve(&server(json!([npm(version)]), json!([]))).expect_err(version);
        let text = error.to_string();
        assert!(
            matches!(error, ResolveError::InexactVersion { .. }),
            "{version:?}: {text}"
        );
        assert!(
            text.contains("@modelcontextprotocol/server-memory"),
            "{version:?}: {text}"
        );
    }
    let mut missing = npm("1.0.0");
    missing.as_object_mut().expect("object").remove("version");
    assert!(matches!(
        resolve(&server(json!([missing]), json!([]))),
        Err(ResolveError::InexactVersion { .. })
    ));
    for version in [
        "1.0.0",
        "2026.1.26",
        "1.0.0-rc.1",
        "v1.2.3",
        "1.0.0+build.5",
        "1.0.0-0.alpha-1+sha.0a1",
    ] {
        assert!(
            resolve(&server(json!([npm(version)]), json!([]))).is_ok(),
            "{version}"
        );
    }
    // pip pins `==1.2` and `==0.6.2.post1` exactly: the npm rule is npm's alone.
    for version in ["1.2", "0.6.2.post1", "2"] {
        let pypi = json!({"registryType": "pypi", "identifier": "mem", "version": version,
                          "transport": {"type": "stdio"}});
        assert!(
            resolve(&server(json!([pypi]), json!([]))).is_ok(),
            "{version}"
        );
    }
}

#[test]
fn identifiers_that_are_paths_urls_or_other_registries_are_refused() {
    let npm_id = |identifier: &str| {
        json!({"registryType": "npm", "identifier": identifier, "version": "1.0.0",
               "transport": {"type": "stdio"}})
    };
    for bad in [
        "../evil",
        "https://evil.example/x.tgz",
        "git+ssh://x",
        "@scope",
        "-y",
        "a b",
    ] {
        assert!(
            matches!(
                resolve(&server(json!([npm_id(bad)]), json!([]))),
                Err(ResolveError::BadIdentifier { .. })
            ),
            "{bad}"
        );
    }
    let mut other = npm_id("x");
    other["registryBaseUrl"] = json!("https://npm.evil.example");
    let error = resolve(&server(json!([other]), json!([]))).expect_err("other registry");
    assert!(
        matches!(error, ResolveError::OtherRegistry { .. }),
        "{error}"
    );
    let mut default = npm_id("x");
    default["registryBaseUrl"] = json!("https://registry.npmjs.org/");
    assert!(resolve(&server(json!([default]), json!([]))).is_ok());
}

#[test]
fn a_required_argument_without_a_value_is_an_error() {
    let mut package = npm("1.0.0");
    package["packageArguments"] = json!([
        {"type": "positional", "valueHint": "directory", "isRequired": true}
    ]);
    let error = resolve(&server(json!([package.clone()]), json!([]))).expect_err("needs value");
    assert_eq!(
        error,
        ResolveError::ArgumentNeedsValue {
            name: "io.github.example/memory".into(),
            package: "@modelcontextprotocol/server-memory".into(),
            argument: "directory".into(),
        }
    );
    package["packageArguments"] = json!([
        {"type": "named", "name": "--root", "valueHint": "directory", "isRequired": true}
    ]);
    assert!(matches!(
        resolve(&server(json!([package.clone()]), json!([]))),
        Err(ResolveError::ArgumentNeedsValue { .. })
    ));
    // Optional ones without a value are left out.
    package["packageArguments"] = json!([
        {"type": "positional", "valueHint": "directory"},
        {"type": "named", "name": "--root", "valueHint": "directory"}
    ]);
    let resolution = resolve(&server(json!([package]), json!([]))).expect("resolves");
    let Choice::Npm { package_args, .. } = resolution.choice else {
        panic!("expected npm");
    };
    assert!(package_args.is_empty());
}

#[test]
fn server_json_round_trips_in_camel_case() {
    let original = server(json!([npm("1.0.0")]), json!([]));
    let text = serde_json::to_value(&original).expect("serializes");
    assert_eq!(text["packages"][0]["registryType"], "npm");
    assert_eq!(text["packages"][0]["transport"]["type"], "stdio");
    assert_eq!(
        text["packages"][0]["environmentVariables"][1]["isSecret"],
        true
    );
    let back: ServerJson = serde_json::from_value(text).expect("deserializes");
    assert_eq!(back, original);
}
