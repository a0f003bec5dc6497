//! JWTs verified against a JSON Web Key Set (a file or an `https://` URL):
//! the signature by the key the token's `kid` names, with an algorithm
//! that key allows (taken from the key, never from the token alone: no
//! `none`, no HMAC, so a public key can never be used as an HMAC secret),
//! the issuer, the audience, `exp` and `nbf` (with a small leeway). The key
//! set is cached; a `kid` it does not have makes it be read again, at most
//! once every [`JWKS_MIN_REFRESH`], and it is read again when older than a
//! quarter of an hour.

use std::collections::BTreeMap;
use std::str::FromStr;
use std::time::Duration;

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{Map, Value};
use tokio::sync::{Mutex, RwLock};
// Tokio's clock, so that tests can move it.
use tokio::time::Instant;

use super::{check_principal, AuthError, Principal};

/// The largest key set read (bytes).
pub const MAX_JWKS_BYTES: usize = 1024 * 1024;
/// The most keys a key set may have.
pub const MAX_KEYS: usize = 100;
/// The least time between two reads of the key set for an unknown `kid`.
pub const JWKS_MIN_REFRESH: Duration = Duration::from_secs(30);
/// The clock skew allowed on `exp` and `nbf` by default.
pub const DEFAULT_LEEWAY: Duration = Duration::from_secs(30);
/// How old a key set may get before it is read again.
const JWKS_MAX_AGE: Duration = Duration::from_secs(15 * 60);
/// How long fetching a key set may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);

/// What a JWT must be, and what it gives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JwtConfig {
    /// The key set: a file, or an `http://`/`https://` URL.
    pub jwks: String,
    /// The `iss` a token must have.
    pub issuer: String,
    /// An `aud` a token must have.
    pub audience: String,
    /// The claim that names the principal (default `sub`).
    pub principal_claim: String,
    /// The policy's `assigns.KEY` and the claim each is read from (a claim
    /// a token lacks is left out).
    pub assigns: BTreeMap<String, String>,
    /// The clock skew allowed on `exp` and `nbf`.
    pub leeway: Duration,
}

impl JwtConfig {
    /// The key set, the issuer and the audience; the principal from
    /// `sub`, no assigns, [`DEFAULT_LEEWAY`].
    pub fn new(jwks: &str, issuer: &str, audience: &str) -> JwtConfig {
        JwtConfig {
            jwks: jwks.to_string(),
            issuer: issuer.to_string(),
            audience: audience.to_string(),
            principal_claim: "sub".to_string(),
            assigns: BTreeMap::new(),
            leeway: DEFAULT_LEEWAY,
        }
    }
}

/// Verifies JWTs against a cached key set.
pub struct JwtVerifier {
    config: JwtConfig,
    keys: RwLock<KeySet>,
    refreshing: Mutex<()>,
    client: reqwest::Client,
}

impl std::fmt::Debug for JwtVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JwtVerifier")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

struct KeySet {
    keys: Vec<Key>,
    /// When the set was last read, or last tried.
    read_at: Instant,
}

struct Key {
    kid: Option<String>,
    key: DecodingKey,
    algorithms: Vec<Algorithm>,
}

impl JwtVerifier {
    /// Reads the key set once, now.
    ///
    /// # Errors
    ///
    /// A key set that cannot be read or fetched, is not a JWKS, or has no
    /// key usable for signatures; an empty issuer or audience.
    pub async fn new(config: JwtConfig) -> Result<JwtVerifier, String> {
        if config.issuer.is_empty() || config.audience.is_empty() {
            return Err(
                "a JWT's issuer and audience must be given (`--issuer`, `--audience`)".into(),
            );
        }
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(FETCH_TIMEOUT)
            .build()
            .map_err(|e| format!("cannot set up the HTTP client: {e}"))?;
        let keys = load(&client, &config.jwks).await?;
        Ok(JwtVerifier {
            config,
            keys: RwLock::new(KeySet {
                keys,
                read_at: Instant::now(),
            }),
            refreshing: Mutex::new(()),
            client,
        })
    }

    /// The principal a JWT names.
    ///
    /// # Errors
    ///
    /// [`AuthError::InvalidToken`] saying what is wrong: not a JWT, an
    /// unknown key, an algorithm its key does not allow, a bad signature,
    /// another issuer or audience, expired, not valid yet, no principal.
    pub async fn verify(&self, token: &str) -> Result<Principal, AuthError> {
        let invalid = |m: String| AuthError::InvalidToken(m);
        let header = jsonwebtoken::decode_header(token)
            .map_err(|e| invalid(format!("not a signed JWT ({e})")))?;
        let kid = header.kid.clone();
        if self.keys.read().await.read_at.elapsed() > JWKS_MAX_AGE {
            self.refresh().await;
        }
        let mut claims = None;
        for attempt in 0..2 {
            {
                let keys = self.keys.read().await;
                if let Some(key) = find(&keys.keys, kid.as_deref()).map_err(invalid)? {
                    if !key.algorithms.contains(&header.alg) {
                        return Err(invalid(format!(
                            "the token is signed with {:?}, which its key does not allow ({})",
                            header.alg,
                            names(&key.algorithms)
                        )));
                    }
                    claims = Some(self.check(token, key, header.alg)?);
                }
            }
            if claims.is_some() || attempt == 1 || kid.is_none() || !self.refresh().await {
                break;
            }
        }
        let claims = claims.ok_or_else(|| {
            invalid(format!(
                "no key `{}` in the key set",
                crate::escape::escape(crate::escape::cut_at(kid.as_deref().unwrap_or(""), 64))
            ))
        })?;
        self.principal(&claims)
    }

    fn check(
        &self,
        token: &str,
        key: &Key,
        alg: Algorithm,
    ) -> Result<Map<String, Value>, AuthError> {
        let mut validation = Validation::new(alg);
        validation.algorithms = vec![alg];
        validation.leeway = self.config.leeway.as_secs();
        validation.validate_nbf = true;
        validation.set_issuer(&[&self.config.issuer]);
        validation.set_audience(&[&self.config.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        let data = jsonwebtoken::decode::<Map<String, Value>>(token, &key.key, &validation)
            .map_err(|e| AuthError::InvalidToken(why(e.kind())))?;
        Ok(data.claims)
    }

    fn principal(&self, claims: &Map<String, Value>) -> Result<Principal, AuthError> {
        let claim = &self.config.principal_claim;
        let name = claims.get(claim).and_then(Value::as_str).ok_or_else(|| {
            AuthError::InvalidToken(format!("no `{claim}` claim naming the principal"))
        })?;
        check_principal(name).map_err(AuthError::InvalidToken)?;
        let mut assigns = Map::new();
        for (key, claim) in &self.config.assigns {
            if let Some(value) = claims.get(claim) {
                assigns.insert(key.clone(), value.clone());
            }
        }
        Ok(Principal {
            name: name.to_string(),
            assigns: Value::Object(assigns),
        })
    }

    /// Reads the key set again unless it was read (or tried) less than
    /// [`JWKS_MIN_REFRESH`] ago; whether it did. A failure keeps the keys
    /// there are (an outage of the key server does not lock everyone out
    /// at once).
    async fn refresh(&self) -> bool {
        let _one_at_a_time = self.refreshing.lock().await;
        if self.keys.read().await.read_at.elapsed() < JWKS_MIN_REFRESH {
            return false;
        }
        self.keys.write().await.read_at = Instant::now();
        match load(&self.client, &self.config.jwks).await {
            Ok(keys) => {
                self.keys.write().await.keys = keys;
                true
            }
            Err(e) => {
                tracing::warn!(target: "mcppol::auth", error = %e, "reading the key set again failed; the keys read before are kept");
                false
            }
        }
    }
}

/// The key a token's `kid` names; with no `kid`, the set's only key.
fn find<'k>(keys: &'k [Key], kid: Option<&str>) -> Result<Option<&'k Key>, String> {
    match kid {
        Some(kid) => Ok(keys.iter().find(|k| k.kid.as_deref() == Some(kid))),
        None if keys.len() == 1 => Ok(keys.first()),
        None => Err(format!(
            "the token names no key (`kid`), and the key set has {}",
            keys.len()
        )),
    }
}

fn names(algorithms: &[Algorithm]) -> String {
    algorithms
        .iter()
        .map(|a| format!("{a:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// What a verification failure means, in words.
fn why(kind: &ErrorKind) -> String {
    match kind {
        ErrorKind::ExpiredSignature => "the token has expired".into(),
        ErrorKind::ImmatureSignature => "the token is not valid yet (`nbf`)".into(),
        ErrorKind::InvalidIssuer => "the token is from another issuer".into(),
        ErrorKind::InvalidAudience => "the token is for another audience".into(),
        ErrorKind::InvalidSignature => "the signature does not verify".into(),
        ErrorKind::MissingRequiredClaim(c) => format!("the token has no `{c}` claim"),
        ErrorKind::InvalidAlgorithm => "the token's algorithm does not fit its key".into(),
        other => format!("{other:?}"),
    }
}

/// Reads and parses the key set at `source`.
async fn load(client: &reqwest::Client, source: &str) -> Result<Vec<Key>, String> {
    let text = if source.starts_with("https://") || source.starts_with("http://") {
        fetch(client, source).await?
    } else {
        crate::io::read_text(
            std::path::Path::new(source),
            MAX_JWKS_BYTES as u64,
            "key set (JWKS)",
        )?
    };
    parse(&text).map_err(|e| format!("the key set `{source}`: {e}"))
}

async fn fetch(client: &reqwest::Client, url: &str) -> Result<String, String> {
    let response = client
        .get(url)
        .header(reqwest::header::ACCEPT, "application/json")
        .send()
        .await
        .map_err(|e| format!("cannot fetch the key set `{url}`: {e}"))?;
    if !response.status().is_success() {
        return Err(format!(
            "the key set `{url}` answered HTTP {}",
            response.status()
        ));
    }
    let body = crate::mcp::http::read_bounded(response, MAX_JWKS_BYTES)
        .await
        .map_err(|e| format!("the key set `{url}`: {e}"))?;
    String::from_utf8(body).map_err(|_| format!("the key set `{url}` is not UTF-8"))
}

/// The usable keys of a JWKS (`{"keys": [...]}`): signature keys of
/// RSA, P-256, P-384 or Ed25519. A key of another kind (a symmetric one,
/// one for encryption, one this build cannot use) is left out with a
/// warning; a set with no usable key is an error.
fn parse(text: &str) -> Result<Vec<Key>, String> {
    let root: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    let list = root
        .get("keys")
        .and_then(Value::as_array)
        .ok_or("not a JWKS: no `keys` list")?;
    if list.len() > MAX_KEYS {
        return Err(format!(
            "{} keys: the most a key set may have is {MAX_KEYS}",
            list.len()
        ));
    }
    let mut keys = Vec::new();
    for (i, raw) in list.iter().enumerate() {
        match key(raw) {
            Ok(k) => keys.push(k),
            Err(e) => {
                tracing::warn!(target: "mcppol::auth", key = i, reason = %e, "a key of the key set is left out")
            }
        }
    }
    if keys.is_empty() {
        return Err("no key in it can verify signatures (RSA, EC P-256/P-384 or Ed25519)".into());
    }
    Ok(keys)
}

fn key(raw: &Value) -> Result<Key, String> {
    if let Some(usage) = raw.get("use").and_then(Value::as_str) {
        if usage != "sig" {
            return Err(format!("its `use` is `{usage}`, not `sig`"));
        }
    }
    let jwk: Jwk = serde_json::from_value(raw.clone()).map_err(|e| format!("not a JWK: {e}"))?;
    let by_type: Vec<Algorithm> = match &jwk.algorithm {
        AlgorithmParameters::RSA(_) => vec![
            Algorithm::RS256,
            Algorithm::RS384,
            Algorithm::RS512,
            Algorithm::PS256,
            Algorithm::PS384,
            Algorithm::PS512,
        ],
        AlgorithmParameters::EllipticCurve(ec) => match ec.curve {
            EllipticCurve::P256 => vec![Algorithm::ES256],
            EllipticCurve::P384 => vec![Algorithm::ES384],
            _ => return Err("an elliptic curve other than P-256 and P-384".into()),
        },
        AlgorithmParameters::OctetKeyPair(okp) if okp.curve == EllipticCurve::Ed25519 => {
            vec![Algorithm::EdDSA]
        }
        AlgorithmParameters::OctetKey(_) => {
            return Err("a symmetric key (`oct`): a key set holds public keys".into())
        }
        _ => return Err("a key type this build cannot verify with".into()),
    };
    // A key that names its algorithm allows that one only, and only if it
    // fits the key's type.
    let algorithms = match raw.get("alg").and_then(Value::as_str) {
        None => by_type,
        Some(name) => {
            let alg = Algorithm::from_str(name).map_err(|_| format!("unknown `alg` `{name}`"))?;
            if !by_type.contains(&alg) {
                return Err(format!("its `alg` `{name}` does not fit its key type"));
            }
            vec![alg]
        }
    };
    let key = DecodingKey::from_jwk(&jwk).map_err(|e| format!("unusable: {e}"))?;
    Ok(Key {
        kid: jwk.common.key_id.clone(),
        key,
        algorithms,
    })
}

#[cfg(test)]
#[path = "jwt_tests.rs"]
mod tests;
