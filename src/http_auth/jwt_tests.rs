//! JWT verification with P-256 keys generated here (jsonwebtoken signs the
//! tokens): a good token, each way one goes wrong, algorithm confusion,
//! the key set's refresh on an unknown `kid`, and a key set over HTTP.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use jsonwebtoken::{encode, EncodingKey, Header};
use serde_json::json;
use sha2::{Digest, Sha256};

use super::*;

/// A fresh P-256 key pair: the signing key and its public JWK with `kid`.
fn key_pair(kid: &str) -> (EncodingKey, Value) {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let seed = format!(
        "{:?}/{}/{kid}",
        SystemTime::now(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    );
    let scalar = Sha256::digest(seed.as_bytes());
    // PKCS#8 around a SEC1 private key on prime256v1, the public key left
    // out (the signer derives it).
    let mut der = vec![
        0x30, 0x41, 0x02, 0x01, 0x00, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02,
        0x01, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x04, 0x27, 0x30, 0x25,
        0x02, 0x01, 0x01, 0x04, 0x20,
    ];
    der.extend_from_slice(&scalar);
    let signing = EncodingKey::from_ec_der(&der);
    let jwk = Jwk::from_encoding_key(&signing, Algorithm::ES256).unwrap_or_else(|e| panic!("{e}"));
    let mut public = serde_json::to_value(&jwk).unwrap_or_else(|e| panic!("{e}"));
    public["kid"] = json!(kid);
    public["use"] = json!("sig");
    (signing, public)
}

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or_default()
}

fn claims() -> Value {
    json!({"iss": "https://idp.test", "aud": "mcppol", "sub": "dana", "exp": now() + 300, "team": "infra", "groups": ["ops"]})
}

fn sign(key: &EncodingKey, kid: Option<&str>, claims: &Value) -> String {
    let mut header = Header::new(Algorithm::ES256);
    header.kid = kid.map(String::from);
    encode(&header, claims, key).unwrap_or_else(|e| panic!("{e}"))
}

/// A verifier over a key set file holding `keys`.
async fn verifier(dir: &tempfile::TempDir, keys: &[&Value]) -> JwtVerifier {
    let path = write_jwks(dir, keys);
    let mut config = JwtConfig::new(&path, "https://idp.test", "mcppol");
    config.assigns = BTreeMap::from([
        ("team".to_string(), "team".to_string()),
        ("groups".to_string(), "groups".to_string()),
        ("absent".to_string(), "nope".to_string()),
    ]);
    JwtVerifier::new(config)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

fn write_jwks(dir: &tempfile::TempDir, keys: &[&Value]) -> String {
    let path = dir.path().join("jwks.json");
    std::fs::write(&path, json!({ "keys": keys }).to_string()).unwrap_or_else(|e| panic!("{e}"));
    path.to_string_lossy().into_owned()
}

fn dir() -> tempfile::TempDir {
    tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"))
}

async fn refused(v: &JwtVerifier, token: &str) -> String {
    match v.verify(token).await {
        Err(AuthError::InvalidToken(m)) => m,
        other => panic!("expected an invalid token, got {other:?}"),
    }
}

#[tokio::test]
async fn a_good_token_names_its_principal_and_the_mapped_assigns() {
    let (signing, public) = key_pair("k1");
    let d = dir();
    let v = verifier(&d, &[&public]).await;
    let who = v
        .verify(&sign(&signing, Some("k1"), &claims()))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(who.name, "dana");
    assert_eq!(who.assigns, json!({"team": "infra", "groups": ["ops"]}));
    // With one key in the set, a token without `kid` uses it.
    assert!(v.verify(&sign(&signing, None, &claims())).await.is_ok());
}

#[tokio::test]
async fn expired_wrong_audience_wrong_issuer_not_yet_and_no_subject() {
    let (signing, public) = key_pair("k1");
    let d = dir();
    let v = verifier(&d, &[&public]).await;
    let with = |key: &str, value: Value| {
        let mut c = claims();
        c[key] = value;
        sign(&signing, Some("k1"), &c)
    };
    assert_eq!(
        refused(&v, &with("exp", json!(now() - 120))).await,
        "the token has expired"
    );
    // Within the leeway, a just-expired token is still good.
    assert!(v.verify(&with("exp", json!(now() - 5))).await.is_ok());
    assert_eq!(
        refused(&v, &with("aud", json!("another"))).await,
        "the token is for another audience"
    );
    assert_eq!(
        refused(&v, &with("iss", json!("https://evil.test"))).await,
        "the token is from another issuer"
    );
    assert_eq!(
        refused(&v, &with("nbf", json!(now() + 600))).await,
        "the token is not valid yet (`nbf`)"
    );
    let mut no_sub = claims();
    no_sub.as_object_mut().map(|c| c.remove("sub"));
    let m = refused(&v, &sign(&signing, Some("k1"), &no_sub)).await;
    assert_eq!(m, "no `sub` claim naming the principal");
    let mut no_exp = claims();
    no_exp.as_object_mut().map(|c| c.remove("exp"));
    let m = refused(&v, &sign(&signing, Some("k1"), &no_exp)).await;
    assert_eq!(m, "the token has no `exp` claim");
}

#[tokio::test]
async fn another_keys_signature_and_algorithm_confusion_are_refused() {
    let (signing, public) = key_pair("k1");
    let (other, _) = key_pair("k1");
    let d = dir();
    let v = verifier(&d, &[&public]).await;
    let m = refused(&v, &sign(&other, Some("k1"), &claims())).await;
    assert_eq!(m, "the signature does not verify");
    // HS256 with the public key as the HMAC secret: the classic confusion.
    for secret in [public["x"].to_string(), public.to_string()] {
        let mut header = Header::new(Algorithm::HS256);
        header.kid = Some("k1".into());
        let forged = encode(
            &header,
            &claims(),
            &EncodingKey::from_secret(secret.as_bytes()).unwrap_or_else(|e| panic!("{e}")),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let m = refused(&v, &forged).await;
        assert!(
            m.contains("signed with HS256, which its key does not allow (ES256)"),
            "{m}"
        );
    }
    // `alg: none`, unsigned.
    let b64 = |v: &Value| {
        use base64_url::encode;
        encode(&v.to_string())
    };
    let none = format!(
        "{}.{}.",
        b64(&json!({"alg": "none", "kid": "k1"})),
        b64(&claims())
    );
    assert!(refused(&v, &none).await.starts_with("not a signed JWT"));
    assert!(refused(&v, "garbage").await.starts_with("not a signed JWT"));
    drop(signing);
}

/// Base64url without padding, enough for the unsigned token above.
mod base64_url {
    pub fn encode(text: &str) -> String {
        const ALPHABET: &[u8; 64] =
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        let bytes = text.as_bytes();
        let mut out = String::new();
        for chunk in bytes.chunks(3) {
            let n = chunk
                .iter()
                .enumerate()
                .fold(0u32, |n, (i, b)| n | (u32::from(*b) << (16 - 8 * i)));
            for i in 0..=chunk.len() {
                out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
            }
        }
        out
    }
}

#[tokio::test(start_paused = true)]
async fn an_unknown_kid_reads_the_key_set_again_at_most_every_30_seconds() {
    let (signing1, public1) = key_pair("k1");
    let (signing2, public2) = key_pair("k2");
    let d = dir();
    let v = verifier(&d, &[&public1]).await;
    let token2 = sign(&signing2, Some("k2"), &claims());
    assert_eq!(refused(&v, &token2).await, "no key `k2` in the key set");
    // The key is published; within the 30 s the set is not read again.
    write_jwks(&d, &[&public1, &public2]);
    tokio::time::advance(Duration::from_secs(10)).await;
    assert_eq!(refused(&v, &token2).await, "no key `k2` in the key set");
    tokio::time::advance(JWKS_MIN_REFRESH).await;
    assert_eq!(v.verify(&token2).await.map(|p| p.name), Ok("dana".into()));
    // Now two keys: a token must say which.
    let m = refused(&v, &sign(&signing1, None, &claims())).await;
    assert_eq!(m, "the token names no key (`kid`), and the key set has 2");
}

#[test]
fn key_sets_keep_signature_keys_only() {
    let (_, public) = key_pair("k1");
    let mut wrong_alg = public.clone();
    wrong_alg["alg"] = json!("RS256");
    let mut for_encryption = public.clone();
    for_encryption["use"] = json!("enc");
    let secret = json!({"kty": "oct", "k": "c2VjcmV0", "kid": "s"});
    for (keys, ok) in [
        (json!([public]), 1),
        (json!([public, secret, for_encryption, wrong_alg]), 1),
    ] {
        let text = json!({ "keys": keys }).to_string();
        assert_eq!(parse(&text).map(|k| k.len()), Ok(ok));
    }
    for (text, want) in [
        (
            json!({"keys": [secret]}).to_string(),
            "no key in it can verify",
        ),
        ("{}".to_string(), "no `keys` list"),
        ("nope".to_string(), "not JSON"),
    ] {
        let e = parse(&text).err().unwrap_or_default();
        assert!(e.contains(want), "{e}");
    }
}

#[tokio::test]
async fn a_key_set_over_http() {
    let (signing, public) = key_pair("k1");
    let body = json!({ "keys": [public] }).to_string();
    let app = axum::Router::new().route("/jwks", axum::routing::get(move || async move { body }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let port = listener
        .local_addr()
        .unwrap_or_else(|e| panic!("{e}"))
        .port();
    tokio::spawn(async move { axum::serve(listener, app).await });
    let config = JwtConfig::new(
        &format!("http://127.0.0.1:{port}/jwks"),
        "https://idp.test",
        "mcppol",
    );
    let v = JwtVerifier::new(config)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(v
        .verify(&sign(&signing, Some("k1"), &claims()))
        .await
        .is_ok());
    let missing = JwtConfig::new(&format!("http://127.0.0.1:{port}/nope"), "i", "a");
    let e = JwtVerifier::new(missing).await.err().unwrap_or_default();
    assert!(e.contains("HTTP 404"), "{e}");
}
