//! Who is calling over HTTP: from an `Authorization: Bearer ...` header to
//! a [`Principal`] (its `name` is the policy's `principal`, its `assigns`
//! the policy's `assigns.KEY`), or an [`AuthError`], each a reason for a
//! 401. `mcppol gateway` and `mcppol serve` answer a request with no
//! token, or a bad one, before anything else.
//!
//! Two ways to know the tokens:
//!
//! - a static tokens file ([`TokenFile`], `--tokens FILE`): each token's
//!   SHA-256 digest (or, for a quick test, the token itself) with the
//!   principal it names and its assigns;
//! - JWTs ([`JwtVerifier`], `--jwks FILE_OR_URL --issuer ISS --audience
//!   AUD`): signed by a key of a JSON Web Key Set, issued by `ISS` for
//!   `AUD`, not expired; the principal is the `sub` claim (or another one
//!   configured), the assigns the claims the configuration maps.
//!
//! ```
//! use mcppol::http_auth::{Authenticator, TokenFile};
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
//! let tokens = TokenFile::parse(r#"{"tokens": [
//!     {"token": "a-long-random-token-for-dana", "principal": "dana", "assigns": {"team": "infra"}}
//! ]}"#)?;
//! let auth = Authenticator::Tokens(tokens);
//! let who = auth.authenticate(Some("Bearer a-long-random-token-for-dana")).await?;
//! assert_eq!(who.name, "dana");
//! assert_eq!(who.assigns["team"], "infra");
//! assert!(auth.authenticate(None).await.is_err());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # })?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod jwt;
mod tokens;

pub use jwt::{JwtConfig, JwtVerifier, DEFAULT_LEEWAY, JWKS_MIN_REFRESH, MAX_JWKS_BYTES, MAX_KEYS};
pub use tokens::{TokenFile, MAX_TOKENS};

use serde_json::Value;

/// The longest bearer token read (bytes).
pub const MAX_TOKEN_BYTES: usize = 16 * 1024;

/// The longest principal name (bytes).
pub const MAX_PRINCIPAL_BYTES: usize = 256;

/// Who a request is made for.
#[derive(Debug, Clone, PartialEq)]
pub struct Principal {
    /// The policy's `principal`.
    pub name: String,
    /// The policy's `assigns` (an object; `{}` when there are none).
    pub assigns: Value,
}

/// Why a request is not authenticated (each one a 401).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    /// No `Authorization` header.
    #[error("no bearer token: send `Authorization: Bearer TOKEN`")]
    Missing,
    /// An `Authorization` header that is not a bearer token, or a token
    /// that cannot be one (empty, too long, not visible ASCII).
    #[error("malformed credentials: {0}")]
    Malformed(String),
    /// A token no entry of the tokens file has.
    #[error("unknown token")]
    UnknownToken,
    /// A JWT that does not verify: its signature, key, algorithm,
    /// issuer, audience, expiry or principal (the message says which).
    #[error("invalid token: {0}")]
    InvalidToken(String),
}

impl AuthError {
    /// The `WWW-Authenticate` header of the 401 (RFC 6750).
    pub fn www_authenticate(&self) -> String {
        let code = match self {
            AuthError::Missing => return "Bearer".to_string(),
            AuthError::Malformed(_) => "invalid_request",
            AuthError::UnknownToken | AuthError::InvalidToken(_) => "invalid_token",
        };
        let description: String = self
            .to_string()
            .chars()
            .map(|c| {
                if c == '"' || c == '\\' || c.is_control() {
                    '\''
                } else {
                    c
                }
            })
            .collect();
        format!("Bearer error=\"{code}\", error_description=\"{description}\"")
    }
}

/// How callers are known.
// One per process, made once: the size of the larger variant costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Authenticator {
    /// A static tokens file.
    Tokens(TokenFile),
    /// JWTs verified against a JSON Web Key Set.
    Jwt(JwtVerifier),
}

impl Authenticator {
    /// The principal an `Authorization` header's bearer token names.
    ///
    /// # Errors
    ///
    /// No header, one that is not a bearer token, or a token that is not
    /// known or does not verify.
    pub async fn authenticate(&self, authorization: Option<&str>) -> Result<Principal, AuthError> {
        let token = bearer(authorization)?;
        match self {
            Authenticator::Tokens(file) => file.verify(token),
            Authenticator::Jwt(verifier) => verifier.verify(token).await,
        }
    }
}

/// The token of an `Authorization: Bearer TOKEN` header (the scheme in
/// any case, RFC 7235).
///
/// # Errors
///
/// No header, another scheme, or a token that is empty, longer than
/// [`MAX_TOKEN_BYTES`] or not visible ASCII.
pub fn bearer(authorization: Option<&str>) -> Result<&str, AuthError> {
    let header = authorization.ok_or(AuthError::Missing)?.trim();
    let (scheme, token) = header.split_once(' ').unwrap_or((header, ""));
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(AuthError::Malformed(
            "the `Authorization` header is not `Bearer TOKEN`".into(),
        ));
    }
    let token = token.trim();
    if token.is_empty() {
        return Err(AuthError::Malformed("the bearer token is empty".into()));
    }
    if token.len() > MAX_TOKEN_BYTES {
        return Err(AuthError::Malformed(format!(
            "the bearer token is longer than {MAX_TOKEN_BYTES} bytes"
        )));
    }
    if !token.bytes().all(|b| (0x21..=0x7e).contains(&b)) {
        return Err(AuthError::Malformed(
            "the bearer token has characters other than visible ASCII".into(),
        ));
    }
    Ok(token)
}

/// A principal name as the policy can compare it: not empty, bounded, no
/// control or invisible characters.
fn check_principal(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("the principal is empty".into());
    }
    if name.len() > MAX_PRINCIPAL_BYTES {
        return Err(format!(
            "the principal is longer than {MAX_PRINCIPAL_BYTES} bytes"
        ));
    }
    if name
        .chars()
        .any(|c| c.is_control() || crate::escape::is_hidden(c))
    {
        return Err(format!(
            "the principal `{}` has control or invisible characters",
            crate::escape::escape(name)
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_reads_the_token_and_refuses_the_rest() {
        assert_eq!(bearer(Some("Bearer abc.def")), Ok("abc.def"));
        assert_eq!(bearer(Some("bearer  abc ")), Ok("abc"));
        assert_eq!(bearer(None), Err(AuthError::Missing));
        for bad in [
            "Basic dXNlcjpwYXNz",
            "Bearer",
            "Bearer ",
            "Bearer a\u{7f}b",
            "Bearer é",
        ] {
            assert!(
                matches!(bearer(Some(bad)), Err(AuthError::Malformed(_))),
                "{bad:?}"
            );
        }
        let long = format!("Bearer {}", "a".repeat(MAX_TOKEN_BYTES + 1));
        assert!(
            matches!(bearer(Some(&long)), Err(AuthError::Malformed(m)) if m.contains("longer"))
        );
    }

    #[test]
    fn www_authenticate_names_the_error() {
        assert_eq!(AuthError::Missing.www_authenticate(), "Bearer");
        let h = AuthError::InvalidToken("the token \"expired\"".into()).www_authenticate();
        assert_eq!(
            h,
            "Bearer error=\"invalid_token\", error_description=\"invalid token: the token 'expired'\""
        );
    }

    #[test]
    fn principals_are_checked() {
        assert!(check_principal("dana").is_ok());
        assert!(check_principal("").is_err());
        assert!(check_principal("a\u{200b}b").is_err());
        assert!(check_principal(&"x".repeat(MAX_PRINCIPAL_BYTES + 1)).is_err());
    }
}
