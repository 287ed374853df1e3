//! What checking an OAuth access token costs a request once the issuer's keys are cached
//! (the issue's bound: under 20 µs at p50), for an ES256 token, an EdDSA token (keys made by
//! ring) and an RS256 one (a 2048-bit key made by `openssl`, as most identity providers sign):
//! `ALG/first`, a token never seen (parse, signature, claims, agent), and `ALG/again`, the
//! same token on a later call (its verified signature remembered: digest, claims, agent).
//!
//! `oauth_signature_floor/ALG` is ring's signature check alone, the part no verifier can skip.
//!
//! `cargo bench -p switchboard-mcp --bench oauth`

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use std::sync::atomic::{AtomicU64, Ordering};

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use ring::rand::SystemRandom;
use ring::signature::{self, EcdsaKeyPair, Ed25519KeyPair, KeyPair, RsaKeyPair};
use serde_json::{Value, json};
use switchboard_core::clock::SystemClock;
use switchboard_core::config::{Config, Format, MapEnvironment, Origin};
use switchboard_mcp::oauth::OAuthVerifier;

const ISSUER: &str = "https://as.example";
const RESOURCE: &str = "http://127.0.0.1:8080/mcp";

fn b64(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

fn rsa_key() -> RsaKeyPair {
    let dir = std::env::temp_dir().join(format!("sb-oauth-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let (pem, der) = (dir.join("rsa.pem"), dir.join("rsa.der"));
    for args in [
        vec!["genrsa", "-out", pem.to_str().expect("path"), "2048"],
        vec!["rsa", "-in", pem.to_str().expect("path"), "-traditional"],
    ] {
        let mut command = std::process::Command::new("openssl");
        command.args(&args);
        if args[0] == "rsa" {
            command.args(["-outform", "DER", "-out", der.to_str().expect("path")]);
        }
        let status = command.output().expect("openssl makes the bench's RSA key");
        assert!(status.status.success(), "openssl {args:?}");
    }
    let key = RsaKeyPair::from_der(&std::fs::read(&der).expect("key")).expect("an RSA key");
    let _ = std::fs::remove_dir_all(&dir);
    key
}

/// A token with a claim set of its own (`jti`), so no two are the same.
/// Signs a token's `header.payload`.
type Sign<'a> = dyn Fn(&[u8]) -> Vec<u8> + 'a;

fn token(header: &Value, sign: &Sign<'_>) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_secs());
    let claims = json!({"iss": ISSUER, "aud": RESOURCE, "sub": "alice", "client_id": "planner",
        "scope": "mcp tools", "iat": now, "nbf": now, "exp": now + 3600,
        "jti": NEXT.fetch_add(1, Ordering::Relaxed)});
    let input = format!(
        "{}.{}",
        b64(header.to_string().as_bytes()),
        b64(claims.to_string().as_bytes())
    );
    let signature = sign(input.as_bytes());
    format!("{input}.{}", b64(&signature))
}

fn bench(c: &mut Criterion) {
    let rng = SystemRandom::new();
    let es_alg = &signature::ECDSA_P256_SHA256_FIXED_SIGNING;
    let es_pkcs8 = EcdsaKeyPair::generate_pkcs8(es_alg, &rng).expect("generate");
    let es = EcdsaKeyPair::from_pkcs8(es_alg, es_pkcs8.as_ref(), &rng).expect("key");
    let ed_pkcs8 = Ed25519KeyPair::generate_pkcs8(&rng).expect("generate");
    let ed = Ed25519KeyPair::from_pkcs8(ed_pkcs8.as_ref()).expect("key");
    let rsa = rsa_key();
    let point = es.public_key().as_ref().to_vec();
    let components = signature::RsaPublicKeyComponents::<Vec<u8>>::from(rsa.public());
    let jwks = json!({"keys": [
        {"kty": "EC", "crv": "P-256", "kid": "es", "x": b64(&point[1..33]), "y": b64(&point[33..65])},
        {"kty": "OKP", "crv": "Ed25519", "kid": "ed", "x": b64(ed.public_key().as_ref())},
        {"kty": "RSA", "kid": "rs", "n": b64(&components.n), "e": b64(&components.e)},
    ]});
    let config = Config::parse(
        &format!(
            "[auth]\nmode = \"oauth\"\nissuer = \"{ISSUER}\"\nresource = \"{RESOURCE}\"\nscopes = [\"mcp\"]\n"
        ),
        Origin::Inline,
        Format::Toml,
        &MapEnvironment(std::collections::BTreeMap::new()),
    )
    .expect("config")
    .auth
    .oauth
    .expect("oauth");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let verifier = runtime.block_on(async {
        OAuthVerifier::with_key_set(config, BTreeSet::new(), Arc::new(SystemClock), jwks)
            .expect("verifier")
    });
    let es256 = |input: &[u8]| es.sign(&rng, input).expect("sign").as_ref().to_vec();
    let eddsa = |input: &[u8]| ed.sign(input).as_ref().to_vec();
    let rs256 = |input: &[u8]| {
        let mut signature = vec![0; rsa.public().modulus_len()];
        rsa.sign(&signature::RSA_PKCS1_SHA256, &rng, input, &mut signature)
            .expect("sign");
        signature
    };
    let signers: [(&str, &str, &Sign<'_>); 3] = [
        ("ES256", "es", &es256),
        ("EdDSA", "ed", &eddsa),
        ("RS256", "rs", &rs256),
    ];
    let resources = [RESOURCE.to_owned()];
    let mut group = c.benchmark_group("oauth_verify");
    for (alg, kid, sign) in signers {
        let header = json!({"alg": alg, "kid": kid, "typ": "at+jwt"});
        let again = token(&header, sign);
        let identity = runtime.block_on(verifier.verify(&again, &resources));
        assert!(identity.is_ok(), "{alg}: {identity:?}");
        group.bench_function(format!("{alg}/first"), |b| {
            b.iter_batched(
                || token(&header, sign),
                |fresh| runtime.block_on(verifier.verify(&fresh, &resources)),
                BatchSize::SmallInput,
            );
        });
        group.bench_function(format!("{alg}/again"), |b| {
            b.iter(|| runtime.block_on(verifier.verify(&again, &resources)));
        });
    }
    group.finish();

    // The floor: ring's signature check alone, with the public key already parsed — what
    // any verifier pays for a token it has not seen, whatever else it does.
    let mut floor = c.benchmark_group("oauth_signature_floor");
    let message = b"eyJhbGciOiJFUzI1NiJ9.eyJpc3MiOiJodHRwczovL2FzLmV4YW1wbGUifQ";
    let es_signature = es256(message);
    let es_public =
        signature::UnparsedPublicKey::new(&signature::ECDSA_P256_SHA256_FIXED, point.clone());
    floor.bench_function("ES256", |b| {
        b.iter(|| es_public.verify(message, &es_signature))
    });
    let ed_signature = eddsa(message);
    let ed_public =
        signature::UnparsedPublicKey::new(&signature::ED25519, ed.public_key().as_ref().to_vec());
    floor.bench_function("EdDSA", |b| {
        b.iter(|| ed_public.verify(message, &ed_signature))
    });
    let rs_signature = rs256(message);
    let rs_public = signature::RsaPublicKeyComponents {
        n: components.n.clone(),
        e: components.e.clone(),
    };
    floor.bench_function("RS256", |b| {
        b.iter(|| {
            rs_public.verify(
                &signature::RSA_PKCS1_2048_8192_SHA256,
                message,
                &rs_signature,
            )
        })
    });
    floor.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
