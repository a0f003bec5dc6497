//! The target index as it was before the decision index: for one list of
//! rules (say the deny rules on tools), which rules' targets match a
//! `(server, name)` pair. Compiled only for the tests, as the oracle the
//! decision index is checked against (`tests.rs`); never in a build.
//!
//! Targets are filed by the shape of their server segment (a literal server,
//! any server, or a server glob) and then of their name segment (literal,
//! prefix, suffix, `*`, other glob, regex). Literal, prefix and suffix
//! patterns are found by hash look-ups, so the cost of a look-up depends on
//! the length of the name and on the few general globs and regexes of the
//! servers involved, not on how many rules the list holds.

use smallvec::SmallVec;

use super::super::glob::Glob;
use super::super::CompiledRegex as Regex;
use super::{BuildMap as FastMap, Hits, IndexedTarget, NameMatcher};

/// Candidates for one server: name patterns by shape.
#[derive(Debug, Default, Clone)]
struct NameIndex {
    literal: FastMap<Box<str>, SmallVec<[u32; 2]>>,
    prefixes: FastMap<Box<str>, SmallVec<[u32; 2]>>,
    prefix_lens: Vec<usize>,
    suffixes: FastMap<Box<str>, SmallVec<[u32; 2]>>,
    suffix_lens: Vec<usize>,
    all: SmallVec<[u32; 2]>,
    globs: Vec<(Glob, u32)>,
    regexes: Vec<(Regex, u32)>,
}

fn add_len(lens: &mut Vec<usize>, len: usize) {
    if let Err(at) = lens.binary_search(&len) {
        lens.insert(at, len);
    }
}

impl NameIndex {
    fn insert(&mut self, name: &NameMatcher, rule: u32) {
        match name {
            NameMatcher::Regex(re) => self.regexes.push((re.clone(), rule)),
            NameMatcher::Glob(Glob::Literal(l)) => {
                self.literal.entry(Box::from(&**l)).or_default().push(rule)
            }
            NameMatcher::Glob(Glob::Any) => self.all.push(rule),
            NameMatcher::Glob(Glob::Prefix(p)) => {
                add_len(&mut self.prefix_lens, p.len());
                self.prefixes.entry(Box::from(&**p)).or_default().push(rule);
            }
            NameMatcher::Glob(Glob::Suffix(s)) => {
                add_len(&mut self.suffix_lens, s.len());
                self.suffixes.entry(Box::from(&**s)).or_default().push(rule);
            }
            NameMatcher::Glob(g @ Glob::Pattern(_)) => self.globs.push((g.clone(), rule)),
        }
    }

    /// Adds the rules whose name pattern matches. `name` is what globs are
    /// matched against; regexes are tried on `raw` as well (loose lists try
    /// a regex on the name as sent and as folded).
    fn collect(&self, name: &str, raw: &str, out: &mut Hits) {
        if let Some(rules) = self.literal.get(name) {
            out.extend_from_slice(rules);
        }
        for &len in &self.prefix_lens {
            if len > name.len() {
                break;
            }
            if let Some(rules) = name.get(..len).and_then(|p| self.prefixes.get(p)) {
                out.extend_from_slice(rules);
            }
        }
        for &len in &self.suffix_lens {
            if len > name.len() {
                break;
            }
            if let Some(rules) = name
                .get(name.len() - len..)
                .and_then(|s| self.suffixes.get(s))
            {
                out.extend_from_slice(rules);
            }
        }
        out.extend_from_slice(&self.all);
        for (glob, rule) in &self.globs {
            if glob.matches(name) {
                out.push(*rule);
            }
        }
        for (re, rule) in &self.regexes {
            if re.is_match(raw) || (raw != name && re.is_match(name)) {
                out.push(*rule);
            }
        }
    }
}

/// Server segments that are prefixes or suffixes (`git*`, `*-prod`), each
/// with the name index of its targets, found by hash like name segments.
#[derive(Debug, Default, Clone)]
struct AffixServers {
    by_affix: FastMap<Box<str>, NameIndex>,
    lens: Vec<usize>,
}

impl AffixServers {
    fn entry(&mut self, affix: &str) -> &mut NameIndex {
        add_len(&mut self.lens, affix.len());
        self.by_affix.entry(affix.into()).or_default()
    }

    /// Every index whose affix `part` of the server gives.
    fn collect<'s>(
        &'s self,
        server: &str,
        part: impl Fn(&str, usize) -> Option<&str>,
        mut each: impl FnMut(&'s NameIndex),
    ) {
        for &len in &self.lens {
            if len > server.len() {
                break;
            }
            if let Some(names) = part(server, len).and_then(|a| self.by_affix.get(a)) {
                each(names);
            }
        }
    }
}

/// The index of one list of targets. Every shape of server segment is
/// filed in one step (a hash look-up), so building the index is linear in
/// the number of targets.
#[derive(Debug, Default, Clone)]
pub struct TargetIndex {
    by_server: FastMap<Box<str>, NameIndex>,
    any_server: NameIndex,
    server_prefixes: AffixServers,
    server_suffixes: AffixServers,
    /// General server globs, in the order first seen, and where each is.
    glob_servers: Vec<(Glob, NameIndex)>,
    glob_at: FastMap<Glob, usize>,
}

impl TargetIndex {
    pub fn insert(&mut self, target: &IndexedTarget, rule: u32) {
        match &target.server {
            Glob::Literal(server) => self
                .by_server
                .entry(Box::from(&**server))
                .or_default()
                .insert(&target.name, rule),
            Glob::Any => self.any_server.insert(&target.name, rule),
            Glob::Prefix(p) => self.server_prefixes.entry(p).insert(&target.name, rule),
            Glob::Suffix(s) => self.server_suffixes.entry(s).insert(&target.name, rule),
            other @ Glob::Pattern(_) => {
                let at = match self.glob_at.get(other) {
                    Some(&at) => at,
                    None => {
                        self.glob_servers
                            .push((other.clone(), NameIndex::default()));
                        let at = self.glob_servers.len() - 1;
                        self.glob_at.insert(other.clone(), at);
                        at
                    }
                };
                if let Some((_, names)) = self.glob_servers.get_mut(at) {
                    names.insert(&target.name, rule);
                }
            }
        }
    }

    /// Adds to `out` every rule with a target that matches, in no order and
    /// possibly more than once. `server` and `name` are folded for a loose
    /// list; `raw_name` is the name as sent.
    pub fn collect(&self, server: &str, name: &str, raw_name: &str, out: &mut Hits) {
        if let Some(names) = self.by_server.get(server) {
            names.collect(name, raw_name, out);
        }
        self.any_server.collect(name, raw_name, out);
        self.server_prefixes.collect(
            server,
            |s, len| s.get(..len),
            |names| names.collect(name, raw_name, out),
        );
        self.server_suffixes.collect(
            server,
            |s, len| s.get(s.len() - len..),
            |names| names.collect(name, raw_name, out),
        );
        for (glob, names) in &self.glob_servers {
            if glob.matches(server) {
                names.collect(name, raw_name, out);
            }
        }
    }

    /// Rules with a target whose both segments are literal and equal to
    /// `server` and `name`: the only ones that may allow a new tool.
    pub fn collect_exact(&self, server: &str, name: &str, out: &mut Hits) {
        if let Some(rules) = self.by_server.get(server).and_then(|n| n.literal.get(name)) {
            out.extend_from_slice(rules);
        }
    }
}

/// Sorts and de-duplicates hits, so that rules are tried in file order.
pub fn in_file_order(hits: &mut Hits) {
    if hits.len() > 1 {
        hits.sort_unstable();
        hits.dedup();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(server: &str, name: &str) -> IndexedTarget {
        IndexedTarget {
            server: Glob::new(server),
            name: NameMatcher::Glob(Glob::new(name)),
        }
    }

    fn hits(index: &TargetIndex, server: &str, name: &str) -> Vec<u32> {
        let mut out = Hits::new();
        index.collect(server, name, name, &mut out);
        in_file_order(&mut out);
        out.to_vec()
    }

    #[test]
    fn every_shape_is_found() {
        let mut index = TargetIndex::default();
        index.insert(&target("github", "get_user"), 0);
        index.insert(&target("github", "get_*"), 1);
        index.insert(&target("github", "*_user"), 2);
        index.insert(&target("*", "get_user"), 3);
        index.insert(&target("git*", "g?t_*r"), 4);
        index.insert(&target("*", "*"), 5);
        index.insert(
            &IndexedTarget {
                server: Glob::new("github"),
                name: NameMatcher::Regex(Regex::new("^get", 1 << 20).expect("regex")),
            },
            6,
        );
        assert_eq!(
            hits(&index, "github", "get_user"),
            vec![0, 1, 2, 3, 4, 5, 6]
        );
        assert_eq!(hits(&index, "gitlab", "get_user"), vec![3, 4, 5]);
        assert_eq!(hits(&index, "github", "list"), vec![5]);
    }

    #[test]
    fn server_prefixes_suffixes_and_globs_are_found() {
        let mut index = TargetIndex::default();
        index.insert(&target("git*", "a"), 0);
        index.insert(&target("*hub", "a"), 1);
        index.insert(&target("g?t*", "a"), 2);
        index.insert(&target("gi*", "*"), 3);
        index.insert(&target("git*", "b"), 4);
        index.insert(&target("g?t*", "b"), 5);
        assert_eq!(hits(&index, "github", "a"), vec![0, 1, 2, 3]);
        assert_eq!(hits(&index, "github", "b"), vec![3, 4, 5]);
        assert_eq!(hits(&index, "gut", "a"), vec![2]);
        assert_eq!(hits(&index, "hub", "a"), vec![1]);
        assert_eq!(hits(&index, "gé", "a"), Vec::<u32>::new());
        assert_eq!(hits(&index, "", "a"), Vec::<u32>::new());
    }

    #[test]
    fn many_server_globs_are_all_found() {
        let mut index = TargetIndex::default();
        for i in 0..3000u32 {
            index.insert(&target(&format!("s{i}*"), "t"), i);
        }
        assert_eq!(hits(&index, "s2999", "t"), vec![2, 29, 299, 2999]);
        assert_eq!(hits(&index, "s12x", "t"), vec![1, 12]);
    }

    #[test]
    fn many_literals_are_all_found() {
        let mut index = TargetIndex::default();
        for i in 0..2000u32 {
            index.insert(&target(&format!("srv-{}", i % 97), &format!("tool_{i}")), i);
        }
        for i in 0..2000u32 {
            let server = format!("srv-{}", i % 97);
            assert_eq!(hits(&index, &server, &format!("tool_{i}")), vec![i]);
        }
        assert!(hits(&index, "srv-1", "tool_2").is_empty());
    }

    #[test]
    fn segments_are_never_joined() {
        let mut index = TargetIndex::default();
        index.insert(&target("a", "b_c"), 0);
        assert!(hits(&index, "a_b", "c").is_empty());
        assert_eq!(hits(&index, "a", "b_c"), vec![0]);
    }

    #[test]
    fn exact_lookup_ignores_globs_and_bare_names() {
        let mut index = TargetIndex::default();
        index.insert(&target("fs", "read_*"), 0);
        index.insert(&target("*", "read_file"), 1);
        index.insert(&target("fs", "read_file"), 2);
        let mut out = Hits::new();
        index.collect_exact("fs", "read_file", &mut out);
        assert_eq!(out.to_vec(), vec![2]);
    }
}
