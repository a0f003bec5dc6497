//! Resource URI normalization (RFC 3986 section 6), applied to every
//! resource read before any rule sees it: scheme and host lower-cased,
//! percent-encodings of unreserved characters decoded (the others written
//! with upper-case hex), then dot segments removed from the path (section
//! 5.2.4), so `file:///srv/a/../../etc/passwd` is matched as
//! `file:///etc/passwd`.
//!
//! A URI that cannot be normalized safely is refused: a `%` not followed by
//! two hex digits, or a path holding an encoded `/`, `\` or NUL (`%2F`,
//! `%5C`, `%00`), or a raw `\` or NUL, which servers read in ways the
//! policy cannot see. The decision is then a deny (`source: request`,
//! `reason: bad_uri`).
//!
//! Lexical only and linear in the URI's length.

use std::borrow::Cow;
use std::fmt;

/// Why a URI cannot be normalized.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UriError {
    /// A `%` not followed by two hex digits.
    BadPercent { at: usize },
    /// `%2F`, `%5C` or `%00` in the path: an encoded `/`, `\` or NUL.
    EncodedSeparator { at: usize, what: &'static str },
    /// A raw `\` or NUL in the path.
    RawSeparator { at: usize, what: &'static str },
}

impl fmt::Display for UriError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UriError::BadPercent { at } => {
                write!(f, "byte {at}: `%` must be followed by two hex digits")
            }
            UriError::EncodedSeparator { at, what } => {
                write!(f, "byte {at}: an encoded {what} in the path")
            }
            UriError::RawSeparator { at, what } => write!(f, "byte {at}: a {what} in the path"),
        }
    }
}

impl std::error::Error for UriError {}

fn is_unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Which part of the URI a piece is: what it may not hold, and whether
/// letters are lower-cased.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Part {
    Host,
    Path,
    Other,
}

/// Percent-normalizes one part into `out`. `offset` is where the part
/// starts in the whole URI (for error positions).
fn percent(part: &str, offset: usize, kind: Part, out: &mut String) -> Result<(), UriError> {
    let bytes = part.as_bytes();
    let mut i = 0;
    let mut plain = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if kind == Part::Path && (b == b'\\' || b == 0) {
            let what = if b == 0 { "NUL" } else { "backslash" };
            return Err(UriError::RawSeparator {
                at: offset + i,
                what,
            });
        }
        if b != b'%' {
            i += 1;
            continue;
        }
        let (Some(hi), Some(lo)) = (
            bytes.get(i + 1).copied().and_then(hex),
            bytes.get(i + 2).copied().and_then(hex),
        ) else {
            return Err(UriError::BadPercent { at: offset + i });
        };
        let decoded = hi * 16 + lo;
        if kind == Part::Path && matches!(decoded, b'/' | b'\\' | 0) {
            let what = match decoded {
                b'/' => "`/`",
                b'\\' => "backslash",
                _ => "NUL",
            };
            return Err(UriError::EncodedSeparator {
                at: offset + i,
                what,
            });
        }
        push_plain(&part[plain..i], kind, out);
        if is_unreserved(decoded) {
            let c = char::from(decoded);
            out.push(if kind == Part::Host {
                c.to_ascii_lowercase()
            } else {
                c
            });
        } else {
            out.push('%');
            out.push(char::from(b"0123456789ABCDEF"[usize::from(hi)]));
            out.push(char::from(b"0123456789ABCDEF"[usize::from(lo)]));
        }
        i += 3;
        plain = i;
    }
    push_plain(&part[plain..], kind, out);
    Ok(())
}

fn push_plain(text: &str, kind: Part, out: &mut String) {
    if kind == Part::Host {
        out.extend(text.chars().map(|c| c.to_ascii_lowercase()));
    } else {
        out.push_str(text);
    }
}

/// The length of a scheme at the start of `uri` (`ALPHA *( ALPHA / DIGIT /
/// "+" / "-" / "." )` followed by `:`), if it has one.
fn scheme_len(uri: &str) -> Option<usize> {
    let bytes = uri.as_bytes();
    if !bytes.first()?.is_ascii_alphabetic() {
        return None;
    }
    let end = bytes
        .iter()
        .position(|b| !(b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.')))?;
    (bytes[end] == b':').then_some(end)
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

/// Whether `uri` is certainly normal already: nothing to decode or
/// refuse, no upper case in scheme or host, no `.` or `..` segment. Lets the
/// common case through without allocating.
fn is_normal(uri: &str) -> bool {
    if uri.bytes().any(|b| matches!(b, b'%' | b'\\' | 0)) {
        return false;
    }
    let mut at = 0;
    if let Some(len) = scheme_len(uri) {
        if uri[..len].bytes().any(|b| b.is_ascii_uppercase()) {
            return false;
        }
        at = len + 1;
    }
    let hier_end = uri[at..].find(['?', '#']).map_or(uri.len(), |i| i + at);
    let mut path = &uri[at..hier_end];
    if let Some(rest) = path.strip_prefix("//") {
        let auth_end = rest.find('/').unwrap_or(rest.len());
        let authority = &rest[..auth_end];
        let host = &authority[authority.rfind('@').map_or(0, |i| i + 1)..];
        if host.bytes().any(|b| b.is_ascii_uppercase()) {
            return false;
        }
        path = &rest[auth_end..];
    }
    !path.split('/').any(|seg| seg == "." || seg == "..")
}

/// Normalizes a resource URI; borrows when it is already normal.
pub fn normalize(uri: &str) -> Result<Cow<'_, str>, UriError> {
    if is_normal(uri) {
        return Ok(Cow::Borrowed(uri));
    }
    normalize_fully(uri)
}

/// [`normalize`] without the quick check.
fn normalize_fully(uri: &str) -> Result<Cow<'_, str>, UriError> {
    let mut out = String::with_capacity(uri.len());
    let mut at = 0;
    if let Some(len) = scheme_len(uri) {
        out.extend(uri[..len].chars().map(|c| c.to_ascii_lowercase()));
        out.push(':');
        at = len + 1;
    }
    // The fragment, then the query, end the hierarchical part.
    let hier_end = uri[at..].find(['?', '#']).map_or(uri.len(), |i| i + at);
    let mut path_start = at;
    if uri[at..hier_end].starts_with("//") {
        let auth_start = at + 2;
        let auth_end = uri[auth_start..hier_end]
            .find('/')
            .map_or(hier_end, |i| i + auth_start);
        let authority = &uri[auth_start..auth_end];
        out.push_str("//");
        // Only the host is case-insensitive; user information is not.
        let host_at = authority.rfind('@').map_or(0, |i| i + 1);
        percent(&authority[..host_at], auth_start, Part::Other, &mut out)?;
        percent(
            &authority[host_at..],
            auth_start + host_at,
            Part::Host,
            &mut out,
        )?;
        path_start = auth_end;
    }
    let mut path = String::with_capacity(hier_end - path_start);
    percent(
        &uri[path_start..hier_end],
        path_start,
        Part::Path,
        &mut path,
    )?;
    let clean = remove_dot_segments(&path);
    // A relative path stays relative: `docs/../readme.md` is `readme.md`,
    // not the `/readme.md` section 5.2.4 leaves.
    let clean = match clean.strip_prefix('/') {
        Some(rest) if !path.starts_with('/') && path_start == at => rest,
        _ => &clean,
    };
    out.push_str(clean);
    percent(&uri[hier_end..], hier_end, Part::Other, &mut out)?;
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
        assert_eq!(n("x:/é/../ü"), "x:/ü");
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
    fn the_quick_check_agrees_with_normalizing() {
        let pieces = [
            "a", "A", "/", ".", "..", "%2e", "%41", "?", "#", "//", "@", ":", "x:", "é", "\\",
        ];
        // Every string of up to four pieces.
        let mut stack: Vec<(String, usize)> = vec![(String::new(), 0)];
        while let Some((s, count)) = stack.pop() {
            if is_normal(&s) {
                let full = normalize_fully(&s).map(Cow::into_owned);
                assert_eq!(full, Ok(s.clone()), "{s:?} is not normal");
            }
            if count < 4 {
                for p in pieces {
                    stack.push((format!("{s}{p}"), count + 1));
                }
            }
        }
    }

    #[test]
    fn long_inputs_stay_linear() {
        let long = format!("file:///{}", "a/../".repeat(20_000));
        assert_eq!(n(&long), "file:///");
    }
}
