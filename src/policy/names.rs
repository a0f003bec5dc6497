//! Name folding for loose matching: lower-case, and `-`, `.` and `_` made
//! equal, so `Delete-Repo` and `delete_repo` fold to the same text.

use std::borrow::Cow;

/// Folds a tool, server or pattern name. Borrows when nothing changes (the
/// common case: names that are already lower-case snake_case).
pub fn fold(name: &str) -> Cow<'_, str> {
    let already = name
        .bytes()
        .all(|b| b.is_ascii() && !b.is_ascii_uppercase() && b != b'-' && b != b'.');
    if already {
        return Cow::Borrowed(name);
    }
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        match c {
            '-' | '.' | '_' => out.push('_'),
            c if c.is_ascii() => out.push(c.to_ascii_lowercase()),
            c => out.extend(c.to_lowercase()),
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::fold;

    #[test]
    fn folds_case_and_punctuation() {
        assert_eq!(fold("Delete-Repo"), "delete_repo");
        assert_eq!(fold("DELETE.REPO"), "delete_repo");
        assert_eq!(fold("delete_repo"), "delete_repo");
        assert_eq!(fold("ÉCRIRE"), "écrire");
        assert!(matches!(fold("get_user_2"), std::borrow::Cow::Borrowed(_)));
    }
}
