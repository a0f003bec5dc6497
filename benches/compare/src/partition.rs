//! The "per server" set-up: the generated rules split by the server they
//! can apply to, as an expert would load them into Cedar and Rego.
//!
//! Every target's server segment is a glob (`github`, `git*`, `*`; a bare
//! tool name and `*` have server `*`). Requests are dispatched on their
//! *folded* server id (`GitHub-3` -> `github_3`), the one key both loose
//! and exact matching agree on:
//!
//! - a target whose server segment is a literal goes into the set of its
//!   folded id: a loose (deny, ask) target matches exactly the requests
//!   whose folded server is that id; an exact (allow) target matches only
//!   requests named exactly so, and those fold to that id too;
//! - a target whose server segment has a `*` goes into every named set
//!   whose id its folded pattern matches (folding is character by
//!   character and keeps `*`, so a name that matches the pattern folds to
//!   an id the folded pattern matches) and into the catch-all set;
//! - a request whose folded server names no set goes to the catch-all set:
//!   no literal-server target can match it.
//!
//! A rule keeps its list and position (its id) in every set it goes into,
//! with only the targets that can apply there, so "deny > ask > allow >
//! default, first rule in file order" gives the same answer within the set
//! as over the whole policy. The runner checks that on every request.

use std::collections::HashMap;

use crate::gen::{fold, PolicySpec, RuleSpec, Target};

/// One set of rules: a named server's or the catch-all.
#[derive(Debug, Clone)]
pub struct Set {
    /// The folded server id; `None` for the catch-all.
    pub key: Option<String>,
    /// The rules that can apply, in file order, with only the targets that
    /// can apply to this set.
    pub rules: Vec<RuleSpec>,
}

impl Set {
    /// In a named set, a loose target's server test is already decided by
    /// the dispatch; exact (allow) targets still test the server as sent.
    pub fn named(&self) -> bool {
        self.key.is_some()
    }
}

/// A target's server segment (`*` for bare and any-server targets).
pub fn server_segment(t: &Target) -> &str {
    match t {
        Target::Pair { server, .. } | Target::Regex { server, .. } => server,
        Target::Bare { .. } | Target::Any => "*",
    }
}

/// Whether a `*`-only glob matches `name` in full.
pub fn glob_match(pattern: &str, name: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = name.strip_prefix(first) else {
        return false;
    };
    let middle: Vec<&str> = parts.collect();
    let Some((last, middle)) = middle.split_last() else {
        // No `*`: the whole name must be the literal.
        return rest.is_empty();
    };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

/// Whether a target can apply to requests dispatched to `key` (a folded
/// server id; `None` for the catch-all).
fn applies(t: &Target, key: Option<&str>) -> bool {
    let seg = fold(server_segment(t));
    match key {
        Some(k) => glob_match(&seg, k),
        None => seg.contains('*'),
    }
}

/// The rules split by server: the named sets (sorted by key) and the
/// catch-all set, last.
pub fn partition(spec: &PolicySpec) -> Vec<Set> {
    let mut keys: Vec<String> = spec
        .rules
        .iter()
        .flat_map(|r| &r.targets)
        .map(server_segment)
        .filter(|s| !s.contains('*'))
        .map(fold)
        .collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .map(Some)
        .chain([None])
        .map(|key| {
            let rules = spec
                .rules
                .iter()
                .filter_map(|r| {
                    let targets: Vec<Target> = r
                        .targets
                        .iter()
                        .filter(|t| applies(t, key.as_deref()))
                        .cloned()
                        .collect();
                    (!targets.is_empty()).then(|| RuleSpec {
                        targets,
                        ..r.clone()
                    })
                })
                .collect();
            Set { key, rules }
        })
        .collect()
}

/// Engines loaded per set, and the dispatch from a folded server id to one.
pub struct PerServer<E> {
    index: HashMap<String, usize>,
    pub engines: Vec<E>,
    catch_all: usize,
}

impl<E> PerServer<E> {
    /// The engines of `sets` (as [`partition`] returns them), one per set
    /// in the same order, with the dispatch index over their keys.
    pub fn new(sets: &[Set], engines: Vec<E>) -> Result<Self, String> {
        if engines.len() != sets.len() {
            return Err(format!("{} engines for {} sets", engines.len(), sets.len()));
        }
        let mut index = HashMap::with_capacity(sets.len());
        let mut catch_all = None;
        for (i, set) in sets.iter().enumerate() {
            match &set.key {
                Some(k) => {
                    index.insert(k.clone(), i);
                }
                None => catch_all = Some(i),
            }
        }
        let catch_all = catch_all.ok_or("no catch-all set")?;
        Ok(PerServer {
            index,
            engines,
            catch_all,
        })
    }

    /// The engine position for a request's folded server id.
    #[inline]
    pub fn slot(&self, server_f: &str) -> usize {
        self.index.get(server_f).copied().unwrap_or(self.catch_all)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(glob_match("git*", "github"));
        assert!(glob_match("*", ""));
        assert!(glob_match("*_bucket", "s3_bucket"));
        assert!(glob_match("a*b*c", "axxbyyc"));
        assert!(!glob_match("a*b*c", "axxbyy"));
        assert!(!glob_match("ab*ba", "aba"));
        assert!(glob_match("github", "github"));
        assert!(!glob_match("github", "github_3"));
    }

    #[test]
    fn every_rule_lands_where_it_can_apply() {
        let spec = crate::gen::policy(1_000);
        let sets = partition(&spec);
        let catch_all = sets.last().expect("catch-all");
        assert!(catch_all.key.is_none());
        // The catch-all holds exactly the rules with a glob server.
        for r in &catch_all.rules {
            assert!(r.targets.iter().all(|t| server_segment(t).contains('*')));
        }
        // Every rule is in at least one set, with all its targets covered.
        for r in &spec.rules {
            for t in &r.targets {
                let found = sets.iter().any(|s| {
                    s.rules.iter().any(|x| {
                        x.effect == r.effect && x.index == r.index && x.targets.contains(t)
                    })
                });
                assert!(found, "{} target {t:?} in no set", r.id);
            }
        }
        // A server's own rules are only in its set.
        let github = sets
            .iter()
            .find(|s| s.key.as_deref() == Some("github"))
            .expect("github set");
        assert!(github.rules.iter().any(|r| r.targets.iter().any(
            |t| matches!(t, Target::Pair { server, tool } if server == "github" && tool == "get_*")
        )));
        assert!(!github
            .rules
            .iter()
            .any(|r| r.targets.iter().any(|t| server_segment(t) == "gitlab")));
        // `git*/force_push` reaches github and gitlab, not slack.
        let has_force = |key: &str| {
            sets.iter()
                .find(|s| s.key.as_deref() == Some(key))
                .is_some_and(|s| {
                    s.rules.iter().any(|r| {
                        r.targets
                            .iter()
                            .any(|t| matches!(t, Target::Pair { server, .. } if server == "git*"))
                    })
                })
        };
        assert!(has_force("github") && has_force("gitlab") && !has_force("slack"));
    }
}
