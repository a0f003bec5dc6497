//! One pass that checks and locates JSON values: the params reader's fast
//! path ([`crate::ToolCallParams::from_json`]) and the arguments' key
//! reader's ([`super::get`]).
//!
//! [`scan_value`] reads a value the way `serde_json` builds one, in a single
//! pass over the bytes, building nothing and allocating nothing; it only
//! ever answers "this builds" (with where the value ends) or "not sure"
//! (`None`). "Not sure" covers every error and also what it does not try to
//! decide itself: an exponent, more than [`MAX_INT_DIGITS`] digits before
//! the point, a `\u` escape of a surrogate, nesting deeper than
//! [`MAX_DEPTH`]. On "not sure" the caller reads the bytes again with
//! `serde_json` and [`super::check`], which decide (and word the error). So
//! what is accepted is exactly what those accept, and the common case costs
//! one pass.

use super::MAX_DEPTH;

/// More digits than this before the decimal point (and no exponent) could
/// overflow an `f64` (about 1.8e308); fewer never do.
const MAX_INT_DIGITS: usize = 300;

/// JSON's whitespace, skipped from `i`.
#[inline]
pub(crate) fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while let Some(b' ' | b'\n' | b'\t' | b'\r') = b.get(i) {
        i += 1;
    }
    i
}

/// The string whose opening quote is just before `i`: the index of its
/// closing quote, if every escape decodes to a character (no surrogate
/// escapes: not sure) and it holds no control character. `escaped` is set
/// if it holds an escape.
#[inline]
pub(crate) fn scan_string(b: &[u8], i: usize, escaped: &mut bool) -> Option<usize> {
    let i = plain_run(b, i);
    if b.get(i) == Some(&b'"') {
        return Some(i);
    }
    scan_string_rest(b, i, escaped)
}

/// [`scan_string`] from an escape or a control character on.
#[inline(never)]
fn scan_string_rest(b: &[u8], mut i: usize, escaped: &mut bool) -> Option<usize> {
    loop {
        i = plain_run(b, i);
        match *b.get(i)? {
            b'"' => return Some(i),
            b'\\' => {
                *escaped = true;
                match *b.get(i + 1)? {
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => i += 2,
                    b'u' => {
                        let hex = b.get(i + 2..i + 6)?;
                        let mut n = 0u32;
                        for &h in hex {
                            n = n * 16 + char::from(h).to_digit(16)?;
                        }
                        if (0xD800..=0xDFFF).contains(&n) {
                            return None;
                        }
                        i += 6;
                    }
                    _ => return None,
                }
            }
            0x00..=0x1f => return None,
            _ => i += 1,
        }
    }
}

/// Eight copies of a byte.
const fn lanes(byte: u8) -> u64 {
    u64::from_ne_bytes([byte; 8])
}

/// Skips from `i` the bytes a string holds as they are (not a quote, a
/// backslash or a control character), eight at a time: the index of the
/// first other byte (or the end).
#[inline]
fn plain_run(b: &[u8], mut i: usize) -> usize {
    const HIGH: u64 = lanes(0x80);
    while let Some(chunk) = b.get(i..i + 8) {
        let Ok(chunk) = <[u8; 8]>::try_from(chunk) else {
            break;
        };
        let word = u64::from_le_bytes(chunk);
        // The high bit of a lane is set where the lane is below 0x20, a
        // quote or a backslash; exact for the first such lane (a borrow
        // only reaches lanes after it).
        let below = |w: u64, n: u8| w.wrapping_sub(lanes(n)) & !w & HIGH;
        let special =
            below(word, 0x20) | below(word ^ lanes(b'"'), 1) | below(word ^ lanes(b'\\'), 1);
        if special != 0 {
            return i + (special.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while let Some(&c) = b.get(i) {
        if c == b'"' || c == b'\\' || c < 0x20 {
            break;
        }
        i += 1;
    }
    i
}

/// The number starting at `i`: where it ends, if it is one `serde_json`
/// reads into a finite number without an exponent.
fn scan_number(b: &[u8], mut i: usize) -> Option<usize> {
    if b.get(i) == Some(&b'-') {
        i += 1;
    }
    let start = i;
    match *b.get(i)? {
        b'0' => i += 1,
        b'1'..=b'9' => {
            while let Some(b'0'..=b'9') = b.get(i) {
                i += 1;
            }
        }
        _ => return None,
    }
    if i - start > MAX_INT_DIGITS {
        return None;
    }
    if b.get(i) == Some(&b'.') {
        i += 1;
        let digits = i;
        while let Some(b'0'..=b'9') = b.get(i) {
            i += 1;
        }
        if i == digits {
            return None;
        }
    }
    match b.get(i) {
        Some(b'0'..=b'9' | b'e' | b'E') => None,
        _ => Some(i),
    }
}

/// The object key starting at `i` (its opening quote), its colon and the
/// whitespace around it: the index of the value after it.
fn scan_key(b: &[u8], i: usize) -> Option<usize> {
    if b.get(i) != Some(&b'"') {
        return None;
    }
    let close = scan_string(b, i + 1, &mut false)?;
    let i = skip_ws(b, close + 1);
    if b.get(i) != Some(&b':') {
        return None;
    }
    Some(skip_ws(b, i + 1))
}

/// The JSON value starting at `i` (no whitespace before it): where it
/// ends, if `serde_json` builds it into a `Value` and it nests at most
/// [`MAX_DEPTH`] levels; `None` if not, or not sure (see above). No
/// recursion: open arrays and objects are bits of a `u128`.
pub(crate) fn scan_value(b: &[u8], mut i: usize) -> Option<usize> {
    // Bit k set: the container open at depth k + 1 is an object.
    let mut objects: u128 = 0;
    let mut depth = 0usize;
    'value: loop {
        match *b.get(i)? {
            b'"' => i = scan_string(b, i + 1, &mut false)? + 1,
            b'-' | b'0'..=b'9' => i = scan_number(b, i)?,
            b't' => i = literal(b, i, b"true")?,
            b'f' => i = literal(b, i, b"false")?,
            b'n' => i = literal(b, i, b"null")?,
            c @ (b'{' | b'[') => {
                if depth == MAX_DEPTH {
                    return None;
                }
                depth += 1;
                let object = c == b'{';
                objects = (objects << 1) | u128::from(object);
                i = skip_ws(b, i + 1);
                match (*b.get(i)?, object) {
                    // Empty: closed below.
                    (b'}', true) | (b']', false) => {}
                    (_, true) => {
                        i = scan_key(b, i)?;
                        continue 'value;
                    }
                    (_, false) => continue 'value,
                }
            }
            _ => return None,
        }
        // Past a value (or at the close of an empty container).
        loop {
            if depth == 0 {
                return Some(i);
            }
            i = skip_ws(b, i);
            match (*b.get(i)?, objects & 1 == 1) {
                (b',', true) => {
                    i = scan_key(b, skip_ws(b, i + 1))?;
                    continue 'value;
                }
                (b',', false) => {
                    i = skip_ws(b, i + 1);
                    continue 'value;
                }
                (b'}', true) | (b']', false) => {
                    i += 1;
                    objects >>= 1;
                    depth -= 1;
                }
                _ => return None,
            }
        }
    }
}

/// The literal `word` at `i`: where it ends.
fn literal(b: &[u8], i: usize, word: &[u8]) -> Option<usize> {
    let end = i + word.len();
    (b.get(i..end)? == word).then_some(end)
}

/// Where the value of `key` is in the object text `b` (the last one if it
/// is written twice), in one pass: `Some(None)` if absent, `None` if not
/// sure (an escaped key, or see [`scan_value`]).
pub(super) fn find(b: &[u8], key: &str) -> Option<Option<(usize, usize)>> {
    let mut found = None;
    let mut i = skip_ws(b, b.first().filter(|&&c| c == b'{').map(|_| 1)?);
    if b.get(i) == Some(&b'}') {
        return Some(None);
    }
    loop {
        if b.get(i) != Some(&b'"') {
            return None;
        }
        let mut escaped = false;
        let close = scan_string(b, i + 1, &mut escaped)?;
        if escaped {
            return None;
        }
        let same = b.get(i + 1..close)? == key.as_bytes();
        i = skip_ws(b, close + 1);
        if b.get(i) != Some(&b':') {
            return None;
        }
        let start = skip_ws(b, i + 1);
        let end = scan_value(b, start)?;
        if same {
            found = Some((start, end));
        }
        i = skip_ws(b, end);
        match *b.get(i)? {
            b',' => i = skip_ws(b, i + 1),
            b'}' => return Some(found),
            _ => return None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::raw_args::check;

    #[test]
    fn one_pass_is_sure_of_the_common_cases_only() {
        let deep = |n: usize| format!(r#"{{"a":{}1{}}}"#, "[".repeat(n - 1), "]".repeat(n - 1));
        for sure in [
            r#"{"id":909,"query":"status:open"}"#,
            "{ \"a\" :\t[ 1 , -0.5 , true , null , {} , [] ] ,\n\"b\":\"\\u00e9\\n\" }",
            r#"{"s":"a long string, \"quoted\", past eight bytes","n":-0}"#,
            r#"{"é":"✓","a":{"a":{"a":"a"}},"a":1}"#,
            &deep(MAX_DEPTH),
        ] {
            assert_eq!(scan_value(sure.as_bytes(), 0), Some(sure.len()), "{sure}");
            check(sure).unwrap();
        }
        for unsure in [
            r#"{"a":1e5}"#,
            r#"{"a":"\ud83d\ude00"}"#,
            &format!(r#"{{"a":{}}}"#, "1".repeat(301)),
            &deep(MAX_DEPTH + 1),
        ] {
            assert_eq!(scan_value(unsure.as_bytes(), 0), None, "{unsure}");
        }
        check(r#"{"a":1e5,"b":"\ud83d\ude00"}"#).unwrap();
        check(&deep(MAX_DEPTH + 1)).unwrap_err();
        for bad in [
            r#"{"a":01}"#,
            r#"{"a":"\ud800"}"#,
            "{\"a\":\"\u{1}\"}",
            r#"{"a":1,}"#,
        ] {
            assert_eq!(scan_value(bad.as_bytes(), 0), None, "{bad}");
            check(bad).unwrap_err();
        }
    }

    #[test]
    fn plain_runs_stop_at_the_first_special_byte() {
        let text = "abcdefgh\u{e9}ijklmnop\"qrstuvwxyz";
        assert_eq!(plain_run(text.as_bytes(), 0), text.find('"').unwrap());
        for special in ['"', '\\', '\u{0}', '\u{1f}'] {
            for at in 0..20 {
                let mut s = "x".repeat(20);
                s.replace_range(at..=at, &special.to_string());
                assert_eq!(plain_run(s.as_bytes(), 0), at, "{special:?} at {at}");
                assert_eq!(plain_run(s.as_bytes(), at.min(3)), at);
            }
        }
        assert_eq!(plain_run(b"\x7f\x80\xff ~!#[]", 0), 9);
    }
}
