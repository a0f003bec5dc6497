//! Resource URI normalization (RFC 3986 section 6), applied to every
//! resource read before any rule sees it, and sent on in place of the text
//! the host gave ("what is decided is what is sent").
//!
//! The URI is parsed by `fluent-uri`, which holds to RFC 3986's grammar:
//! any character the RFC does not allow (white space, control characters,
//! raw non-ASCII, a `\`, a `%` not followed by two hex digits) is refused.
//! WHATWG and Python parsers silently drop a tab or newline, so
//! `file:///a/.\t./b` would reach a server as `file:///a/../b`: refusing is
//! the only reading every server agrees with. Then `fluent-uri` normalizes
//! (scheme and host lower-cased, percent-encodings of unreserved characters
//! decoded and the others upper-cased, an empty or default port dropped,
//! dot segments removed, section 5.2.4), and this module adds what it
//! leaves:
//!
//! - dot segments are removed from relative references and rootless paths
//!   too (`docs/../readme.md` is `readme.md`);
//! - a path holding an encoded `/`, `\` or NUL (`%2F`, `%5C`, `%00`) is
//!   refused: servers decode it in ways the policy cannot see;
//! - `file` URIs have one spelling: `file://localhost/x`, `file:/x` and
//!   `file:////x` are all `file:///x` (several leading slashes keep one).
//!   A `file` URI naming another host, a user, a port, or a relative path
//!   is refused: servers differ on whether they read the host.
//!
//! A URI that is refused is denied (`source: request`, `reason: bad_uri`).
//! Linear in the URI's length.

use std::borrow::Cow;
use std::fmt;

use fluent_uri::normalize::Normalizer;
use fluent_uri::UriRef;

/// Why a URI cannot be normalized.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UriError {
    /// A character RFC 3986 does not allow there, or a malformed part
    /// (what `fluent-uri` refused).
    Syntax {
        /// The byte offset of the offending character.
        at: usize,
        /// What is wrong, in words.
        what: String,
    },
    /// `%2F`, `%5C` or `%00` in the path: an encoded `/`, `\` or NUL.
    EncodedSeparator {
        /// The byte offset of its `%`.
        at: usize,
        /// What it encodes.
        what: &'static str,
    },
    /// A `file` URI that names a host other than `localhost`, a user or a
    /// port, or whose path is relative.
    FileForm {
        /// What is wrong, in words.
        what: &'static str,
    },
}

impl fmt::Display for UriError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UriError::Syntax { at, what } => write!(f, "byte {at}: {what}"),
            UriError::EncodedSeparator { at, what } => {
                write!(f, "byte {at}: an encoded {what} in the path")
            }
            UriError::FileForm { what } => write!(f, "a file URI {what}"),
        }
    }
}

impl std::error::Error for UriError {}

/// The syntax error for what `fluent-uri` refused, naming the character.
fn syntax_error(uri: &str, e: &fluent_uri::ParseError) -> UriError {
    use fluent_uri::ParseErrorKind as K;
    let at = e.index();
    let what = match e.kind() {
        K::InvalidPctEncodedOctet => "`%` must be followed by two hex digits".to_owned(),
        K::UnexpectedChar => match uri.get(at..).and_then(|rest| rest.chars().next()) {
            Some(c) if c.is_whitespace() => {
                format!(
                    "white space ({}) is not allowed in a URI",
                    c.escape_unicode()
                )
            }
            Some(c) if c.is_control() => format!(
                "a control character ({}) is not allowed in a URI",
                c.escape_unicode()
            ),
            Some(c) if !c.is_ascii() => format!(
                "{} is not allowed in a URI (RFC 3986): percent-encode it",
                c.escape_unicode()
            ),
            Some(c) => format!("`{}` is not allowed here in a URI", c.escape_default()),
            None => "the URI ends too early".to_owned(),
        },
        K::InvalidIpv6Addr => "not an IPv6 address".to_owned(),
    };
    UriError::Syntax { at, what }
}

/// Refuses an encoded `/`, `\` or NUL in `path` (which starts at `offset`
/// of the URI); the parser has already checked every `%` has two hex
/// digits.
fn check_encoded_separators(path: &str, offset: usize) -> Result<(), UriError> {
    let bytes = path.as_bytes();
    for (i, _) in path.match_indices('%') {
        let octet = bytes.get(i + 1..i + 3).unwrap_or_default();
        let what = match octet.to_ascii_uppercase().as_slice() {
            b"2F" => "`/`",
            b"5C" => "backslash",
            b"00" => "NUL",
            _ => continue,
        };
        return Err(UriError::EncodedSeparator {
            at: offset + i,
            what,
        });
    }
    Ok(())
}

/// RFC 3986 section 5.2.4, on an already percent-normalized path.
pub fn remove_dot_segments(path: &str) -> String {
    let mut input = path;
    let mut out = String::with_capacity(path.len());
    while !input.is_empty() {
        if let Some(rest) = input.strip_prefix("../") {
            input = rest;
        } else if let Some(rest) = input.strip_prefix("./") {
            input = rest;
        } else if input.starts_with("/./") {
            input = &input[2..];
        } else if input == "/." {
            input = "/";
        } else if input.starts_with("/../") {
            input = &input[3..];
            pop_segment(&mut out);
        } else if input == "/.." {
            input = "/";
            pop_segment(&mut out);
        } else if input == "." || input == ".." {
            input = "";
        } else {
            let start = usize::from(input.starts_with('/'));
            let end = input[start..].find('/').map_or(input.len(), |i| i + start);
            out.push_str(&input[..end]);
            input = &input[end..];
        }
    }
    out
}

fn pop_segment(out: &mut String) {
    match out.rfind('/') {
        Some(at) => out.truncate(at),
        None => out.clear(),
    }
}

/// The parts of a parsed URI reference, as text.
struct Parts<'a> {
    scheme: Option<&'a str>,
    authority: Option<&'a str>,
    path: &'a str,
    query: Option<&'a str>,
    fragment: Option<&'a str>,
}

impl<'a> Parts<'a> {
    fn of(r: &'a UriRef<&'a str>) -> Self {
        Parts {
            scheme: r.scheme().map(|s| s.as_str()),
            authority: r.authority().map(|a| a.as_str()),
            path: r.path().as_str(),
            query: r.query().map(|q| q.as_str()),
            fragment: r.fragment().map(|f| f.as_str()),
        }
    }

    fn write(&self, path: &str) -> String {
        let mut out = String::with_capacity(path.len() + 16);
        if let Some(scheme) = self.scheme {
            out.push_str(scheme);
            out.push(':');
        }
        if let Some(authority) = self.authority {
            out.push_str("//");
            out.push_str(authority);
        }
        out.push_str(path);
        if let Some(query) = self.query {
            out.push('?');
            out.push_str(query);
        }
        if let Some(fragment) = self.fragment {
            out.push('#');
            out.push_str(fragment);
        }
        out
    }
}

/// The one path of a `file` URI: `file://localhost/x`, `file:/x`,
/// `file:////x` are `file:///x`.
fn file_path<'p>(path: &'p str, uri: &UriRef<&str>) -> Result<&'p str, UriError> {
    if let Some(authority) = uri.authority() {
        if authority.userinfo().is_some() || authority.port().is_some() {
            return Err(UriError::FileForm {
                what: "names a user or a port",
            });
        }
        let host = authority.host();
        if !(host.is_empty() || host.eq_ignore_ascii_case("localhost")) {
            return Err(UriError::FileForm {
                what: "names a host other than `localhost`",
            });
        }
    }
    if !path.starts_with('/') {
        return Err(UriError::FileForm {
            what: "has a relative path",
        });
    }
    Ok(&path[path.len() - path.trim_start_matches('/').len() - 1..])
}

/// Normalizes a resource URI; borrows when it is already normal.
pub fn normalize(uri: &str) -> Result<Cow<'_, str>, UriError> {
    let raw = UriRef::parse(uri).map_err(|e| syntax_error(uri, &e))?;
    let path_at = raw.path().as_str().as_ptr() as usize - uri.as_ptr() as usize;
    check_encoded_separators(raw.path().as_str(), path_at)?;
    let normal = Normalizer::new()
        .normalize(&raw)
        .map_err(|_| UriError::Syntax {
            at: path_at,
            what: "the path climbs above its root".to_owned(),
        })?;
    let normal = normal.borrow();
    let mut parts = Parts::of(&normal);
    // fluent-uri leaves dot segments in relative references and rootless
    // paths (and writes `/.//` for a path that would start with `//`); they
    // go here too, a relative path staying relative.
    let mut path = Cow::Borrowed(parts.path);
    if path.split('/').any(|s| s == "." || s == "..") {
        let clean = remove_dot_segments(&path);
        path = match clean.strip_prefix('/') {
            Some(rest) if !path.starts_with('/') => Cow::Owned(rest.to_owned()),
            _ => Cow::Owned(clean),
        };
    }
    if parts.scheme == Some("file") {
        path = Cow::Owned(file_path(&path, &normal)?.to_owned());
        parts.authority = Some("");
    }
    // Written out, the path must read back as a path: `//x` without an
    // authority would become a host, and `a:b` first a scheme.
    if parts.authority.is_none() && path.starts_with("//") {
        path = Cow::Owned(format!("/.{path}"));
    } else if parts.scheme.is_none()
        && parts.authority.is_none()
        && path.split('/').next().is_some_and(|s| s.contains(':'))
    {
        path = Cow::Owned(format!("./{path}"));
    }
    let out = parts.write(&path);
    if out == uri {
        Ok(Cow::Borrowed(uri))
    } else {
        Ok(Cow::Owned(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(uri: &str) -> String {
        normalize(uri)
            .map(Cow::into_owned)
            .unwrap_or_else(|e| format!("error: {e}"))
    }

    #[test]
    fn dot_segments_go() {
        assert_eq!(
            n("file:///home/dev/project/../../../etc/passwd"),
            "file:///etc/passwd"
        );
        assert_eq!(n("file:///a/./b/../c/"), "file:///a/c/");
        assert_eq!(n("file:///../../x"), "file:///x");
        assert_eq!(n("file:///a/b/.."), "file:///a/");
        assert_eq!(n("file:///a/b/."), "file:///a/b/");
        assert_eq!(n("docs/../readme.md"), "readme.md");
        assert_eq!(n("../../readme.md"), "readme.md");
        assert_eq!(n("readme.md"), "readme.md");
    }

    #[test]
    fn rfc_3986_section_5_4_examples() {
        // remove_dot_segments on the merged paths of section 5.4.
        assert_eq!(remove_dot_segments("/a/b/c/./../../g"), "/a/g");
        assert_eq!(remove_dot_segments("mid/content=5/../6"), "mid/6");
        assert_eq!(remove_dot_segments("/b/c/../../../g"), "/g");
        assert_eq!(remove_dot_segments("/b/c/g;x=1/./y"), "/b/c/g;x=1/y");
        assert_eq!(remove_dot_segments("/b/c/g/.."), "/b/c/");
    }

    #[test]
    fn case_and_percent_encoding() {
        assert_eq!(
            n("HTTPS://Example.COM/A%7eb/%2e%2e/c%3f?Q=%41#F"),
            "https://example.com/c%3F?Q=A#F"
        );
        assert_eq!(
            n("file:///home/dev/project/%2E%2E/%2e%2E/secret"),
            "file:///home/secret"
        );
        assert_eq!(n("s3://User@Bucket/Key"), "s3://User@bucket/Key");
        assert_eq!(n("x:/%C3%A9/../%C3%BC"), "x:/%C3%BC");
        assert_eq!(n("https://h:443/a"), "https://h/a");
    }

    #[test]
    fn already_normal_uris_are_borrowed() {
        for uri in [
            "file:///etc/passwd",
            "https://example.com/a?b#c",
            "readme.md",
        ] {
            assert!(matches!(normalize(uri), Ok(Cow::Borrowed(_))), "{uri}");
        }
    }

    #[test]
    fn what_cannot_be_normalized() {
        for uri in [
            "file:///a%2Fb",
            "file:///a%2fb",
            "file:///a%2f..%2fetc",
            "file:///a%5Cb",
            "file:///a%00b",
            "file:///a\\b",
            "file:///a\u{0}b",
            "file:///a%zz",
            "file:///a%4",
            "file:///a%",
            "https://h%ZZ/",
            "x:?q=%G0",
        ] {
            assert!(normalize(uri).is_err(), "{uri}");
        }
        // Outside the path an encoded slash is data, not a separator.
        assert_eq!(n("https://h/p?next=%2Fetc"), "https://h/p?next=%2Fetc");
    }

    #[test]
    fn normalizing_twice_changes_nothing() {
        let pieces = [
            "a", "A", "/", ".", "..", "%2e", "%41", "?", "#", "//", "@", ":", "x:", "file:",
            "%C3%A9",
        ];
        // Every string of up to four pieces.
        let mut stack: Vec<(String, usize)> = vec![(String::new(), 0)];
        while let Some((s, count)) = stack.pop() {
            if let Ok(once) = normalize(&s) {
                let twice = normalize(&once).map(Cow::into_owned);
                assert_eq!(twice, Ok(once.clone().into_owned()), "{s:?}");
            }
            if count < 4 {
                for p in pieces {
                    stack.push((format!("{s}{p}"), count + 1));
                }
            }
        }
    }

    #[test]
    fn white_space_and_control_characters_are_refused() {
        // WHATWG and Python parsers drop these: `.\t.` reaches them as `..`.
        for uri in [
            "file:///srv/sandbox/.\t./secret.txt",
            "file:///e\ttc/passwd",
            " file:///etc/passwd",
            "file:///etc/passwd ",
            "file:///etc/pa\nsswd",
            "file:///etc/pa\rsswd",
            "file:///a b",
            "file:///a\u{7f}b",
            "file:///a\u{85}b",
            "file:///a\u{202e}b",
            "file:///a\u{200b}b",
            "file:///caf\u{e9}",
            "http://h/a|b",
            "file:///a\"b",
        ] {
            let e = normalize(uri).expect_err(uri);
            assert!(matches!(e, UriError::Syntax { .. }), "{uri}: {e}");
        }
        let e = normalize("file:///a\tb").expect_err("tab");
        assert_eq!(
            e.to_string(),
            "byte 9: white space (\\u{9}) is not allowed in a URI"
        );
    }

    #[test]
    fn file_uris_have_one_spelling() {
        for uri in [
            "file:///etc/passwd",
            "file://localhost/etc/passwd",
            "file://LOCALHOST/etc/passwd",
            "file:/etc/passwd",
            "file:////etc/passwd",
            "file://///etc/passwd",
            "file://localhost//etc/passwd",
            "FILE:///etc/./passwd",
            "file:///tmp/../etc/passwd",
        ] {
            assert_eq!(n(uri), "file:///etc/passwd", "{uri}");
        }
        assert_eq!(n("file:"), "error: a file URI has a relative path");
        assert_eq!(
            n("file:etc/passwd"),
            "error: a file URI has a relative path"
        );
        assert_eq!(
            n("file://evil/etc/passwd"),
            "error: a file URI names a host other than `localhost`"
        );
        assert_eq!(
            n("file://u@localhost/etc/passwd"),
            "error: a file URI names a user or a port"
        );
        assert_eq!(n("file:///%2e%2e/etc"), "file:///etc");
    }

    #[test]
    fn long_inputs_stay_linear() {
        let long = format!("file:///{}", "a/../".repeat(20_000));
        assert_eq!(n(&long), "file:///");
    }
}
