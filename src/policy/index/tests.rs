//! The index against its oracle, the previous per-list index
//! (`oracle.rs`): on random targets and names, every list offers exactly
//! the rules the oracle finds, and the allow list exactly the exact ones.

use proptest::prelude::*;

use super::super::glob::Glob;
use super::super::names::fold;
use super::super::CompiledRegex;
use super::oracle::{in_file_order, TargetIndex};
use super::*;

/// One target of a generated list: list, rule number, server, name or
/// regex.
type Spec = (List, u32, String, Result<String, &'static str>);

fn matcher(spec: &Spec) -> IndexedTarget {
    let (list, _, server, name) = spec;
    let loose = *list != List::Allow;
    let glob = |s: &str| {
        if loose {
            Glob::new(&fold(s))
        } else {
            Glob::new(s)
        }
    };
    IndexedTarget {
        server: glob(server),
        name: match name {
            Ok(n) => NameMatcher::Glob(glob(n)),
            Err(re) => NameMatcher::Regex(CompiledRegex::new(re, 1 << 20).unwrap()),
        },
    }
}

const LISTS: [List; 3] = [List::Deny, List::Ask, List::Allow];

/// The old index (one per list) and the new one over the same targets.
fn build(specs: &[Spec]) -> ([TargetIndex; 3], Index) {
    let mut old: [TargetIndex; 3] = Default::default();
    let mut new = IndexBuilder::default();
    for spec in specs {
        let m = matcher(spec);
        old[spec.0.index()].insert(&m, spec.1);
        new.insert(spec.0, spec.1, &m, spec.0 != List::Allow);
    }
    (old, new.build())
}

/// Every list's hits, and the allow list's exact hits, agree.
fn agree(specs: &[Spec], server: &str, name: &str) -> Result<(), TestCaseError> {
    let (old, new) = build(specs);
    let (fs, fname) = (fold(server), fold(name));
    let q = Query {
        server,
        name,
        folded_server: fs.as_bytes(),
        folded_name: fname.as_bytes(),
        server_unfolded: fs == server,
        name_unfolded: fname == name,
    };
    let mut cands = Cands::new();
    new.candidates(&q, &mut cands);
    for (list, index) in LISTS.into_iter().zip(&old) {
        let mut want = Hits::new();
        if list == List::Allow {
            index.collect(server, name, name, &mut want);
        } else {
            index.collect(&fs, &fname, name, &mut want);
        }
        in_file_order(&mut want);
        let got = hits_of(&cands, list, |c| new.admits(c, &q, false));
        prop_assert_eq!(
            got.to_vec(),
            want.to_vec(),
            "list {:?} {}/{}",
            list,
            server,
            name
        );
    }
    let mut want = Hits::new();
    old[2].collect_exact(server, name, &mut want);
    in_file_order(&mut want);
    let got = hits_of(&cands, List::Allow, |c| new.admits(c, &q, true));
    prop_assert_eq!(got.to_vec(), want.to_vec(), "exact {}/{}", server, name);
    Ok(())
}

fn segment() -> impl Strategy<Value = String> {
    proptest::string::string_regex("[aAb_.*?-]{0,4}|é|\\*|ab\\*|\\*_b").unwrap()
}

fn spec() -> impl Strategy<Value = Spec> {
    let name = prop_oneof![
        6 => segment().prop_map(Ok),
        1 => prop::sample::select(vec!["^a", "b$", "^a_b$", "(?i)^A", "_", "^a.b", "^A", "-$", "^a-b$", "^$"]).prop_map(Err),
    ];
    (
        prop::sample::select(LISTS.to_vec()),
        0..6u32,
        segment(),
        name,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]
    /// The decision index offers exactly what the old per-list index
    /// did, for every list, on random targets and names.
    #[test]
    fn agrees_with_the_old_index(
        specs in prop::collection::vec(spec(), 0..24),
        server in "[aAb_.-]{0,4}|é",
        name in "[aAb_.-]{0,5}|é",
    ) {
        agree(&specs, &server, &name)?;
    }
}

#[test]
fn a_literal_merges_a_bounded_number_of_patterns() {
    let mut new = IndexBuilder::default();
    for i in 0..40u32 {
        let target = matcher(&(List::Deny, i, "s".into(), Ok("*".into())));
        new.insert(List::Deny, i, &target, true);
    }
    let target = matcher(&(List::Deny, 40, "s".into(), Ok("t".into())));
    new.insert(List::Deny, 40, &target, true);
    let new = new.build();
    let q = Query {
        server: "s",
        name: "t",
        folded_server: b"s",
        folded_name: b"t",
        server_unfolded: true,
        name_unfolded: true,
    };
    let mut cands = Cands::new();
    new.candidates(&q, &mut cands);
    assert_eq!(hits_of(&cands, List::Deny, |_| true).len(), 41);
    assert_eq!(new.tables(), 2);
}

/// A candidate keeps its list and number, and candidates sort in file
/// order: deny before ask before allow, then by number.
#[test]
fn candidates_sort_by_list_then_number() {
    let mut cands: Vec<Cand> = vec![
        Cand::new(List::Allow, 0, NO_CHECK),
        Cand::new(List::Deny, 7, NO_CHECK),
        Cand::new(List::Ask, 2, NO_CHECK),
        Cand::new(List::Deny, 1, NO_CHECK),
    ];
    cands.sort_unstable_by_key(|c| c.key);
    let seen: Vec<(List, u32)> = cands.iter().map(|c| (c.list(), c.number())).collect();
    assert_eq!(
        seen,
        [
            (List::Deny, 1),
            (List::Deny, 7),
            (List::Ask, 2),
            (List::Allow, 0)
        ]
    );
}
