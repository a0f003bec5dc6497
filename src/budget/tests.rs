use std::sync::Arc;

use super::*;
use crate::PolicySet;

fn policy(text: &str) -> Arc<Policy> {
    let set =
        PolicySet::from_text("p.mcppol", text).unwrap_or_else(|e| panic!("{}", e.render(false)));
    let first = set
        .iter()
        .next()
        .unwrap_or_else(|| panic!("no policy"))
        .clone();
    first
}

fn block_on<F: Future>(f: F) -> F::Output {
    // The memory store's futures are ready at once.
    let mut f = std::pin::pin!(f);
    let waker = std::task::Waker::noop();
    let mut cx = std::task::Context::from_waker(waker);
    match f.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(v) => v,
        std::task::Poll::Pending => panic!("the memory store never waits"),
    }
}

#[test]
fn a_budget_takes_allowed_calls_up_to_its_count_per_window() {
    let p = policy(
        r#"policy p {
            limit sends: "*/send_*" 3 per minute
            allow "mail/send_mail"
        }"#,
    );
    let store = MemoryBudgets::new();
    let allow = p.decide(&crate::Request::tool("mail", "send_mail"));
    let at = |now| Charges::of(&p, "mail", "send_mail", Caller::default(), now);
    for _ in 0..3 {
        let d = block_on(at(120).apply(&store, allow.clone(), Stage::Final));
        assert_eq!(d, allow);
    }
    let d = block_on(at(179).apply(&store, allow.clone(), Stage::Final));
    assert_eq!(
        (d.decision, d.source, d.reason, d.rule_id.as_deref(), d.line),
        (
            Verdict::Deny,
            Source::Limit,
            Reason::LimitExceeded,
            Some("sends"),
            Some(2)
        )
    );
    // The next window starts afresh.
    let d = block_on(at(180).apply(&store, allow.clone(), Stage::Final));
    assert_eq!(d, allow);
}

#[test]
fn a_pending_call_is_refused_when_spent_and_takes_nothing() {
    let p = policy(
        r#"policy p {
            limit "*/merge" 1 per hour per principal
            ask "gh/merge"
        }"#,
    );
    let store = MemoryBudgets::new();
    let ask = p.decide(&crate::Request::tool("gh", "merge"));
    assert_eq!(ask.decision, Verdict::Ask);
    let ann = Caller {
        principal: Some("ann"),
        session: None,
    };
    let bob = Caller {
        principal: Some("bob"),
        session: None,
    };
    let of = |c| Charges::of(&p, "gh", "merge", c, 10);
    assert_eq!(
        block_on(of(ann).apply(&store, ask.clone(), Stage::Pending)),
        ask
    );
    assert_eq!(
        block_on(of(ann).apply(&store, ask.clone(), Stage::Pending)),
        ask
    );
    assert_eq!(
        block_on(of(ann).apply(&store, ask.clone(), Stage::Final)),
        ask
    );
    let d = block_on(of(ann).apply(&store, ask.clone(), Stage::Pending));
    assert_eq!(
        (d.source, d.rule_id.as_deref()),
        (Source::Limit, Some("limit:0"))
    );
    // Per principal: bob's budget is his own.
    assert_eq!(
        block_on(of(bob).apply(&store, ask.clone(), Stage::Final)),
        ask
    );
}

#[test]
fn deny_rules_come_first_and_ungoverned_calls_never_count() {
    let p = policy(
        r#"policy p {
            limit "*" 0 per day
            deny "fs/rm"
            allow "fs/read"
        }"#,
    );
    let store = MemoryBudgets::new();
    let denied = p.decide(&crate::Request::tool("fs", "rm"));
    let charges = Charges::of(&p, "fs", "rm", Caller::default(), 0);
    assert_eq!(
        block_on(charges.apply(&store, denied.clone(), Stage::Pending)),
        denied
    );
    let allowed = p.decide(&crate::Request::tool("fs", "read"));
    let charges = Charges::of(&p, "fs", "read", Caller::default(), 0);
    let d = block_on(charges.apply(&store, allowed, Stage::Final));
    assert_eq!(d.reason, Reason::LimitExceeded);
    assert!(!counts(&Decision::no_policy()));
}

#[test]
fn a_call_counts_against_every_budget_or_none() {
    let p = policy(
        r#"policy p {
            limit wide: "*" 5 per hour
            limit narrow: "*/send" 1 per hour
            allow "*/send", "*/read"
        }"#,
    );
    let store = MemoryBudgets::new();
    let send = Charges::of(&p, "m", "send", Caller::default(), 0);
    let read = Charges::of(&p, "m", "read", Caller::default(), 0);
    assert_eq!(send.charges.len(), 2);
    assert_eq!(block_on(store.take(&send.charges)), Room::Available);
    assert_eq!(block_on(store.take(&send.charges)), Room::Spent(1));
    // The refused send took nothing from `wide`: four reads still fit.
    for _ in 0..4 {
        assert_eq!(block_on(store.take(&read.charges)), Room::Available);
    }
    assert_eq!(block_on(store.take(&read.charges)), Room::Spent(0));
    assert_eq!(store.taken(&read.charges[0].key), 5);
}

#[test]
fn targets_match_loosely_and_names_are_hashed_into_keys() {
    let p = policy(r#"policy p { limit s: "*/send_*" 1 per second per session allow "*" }"#);
    assert_eq!(p.limits_for("Mail", "Send-Mail").len(), 1);
    assert!(p.limits_for("mail", "read").is_empty());
    let c = Charges::of(
        &p,
        "m",
        "send_x",
        Caller {
            principal: None,
            session: Some("a:b\n"),
        },
        7,
    );
    let key = &c.charges[0].key;
    assert!(key.starts_with("budget:p:s:1:7:s:"), "{key}");
    assert!(key.bytes().all(|b| b.is_ascii_graphic()), "{key}");
    let none = Charges::of(&p, "m", "send_x", Caller::default(), 7);
    assert!(none.charges[0].key.ends_with(":s-"));
}

#[test]
fn exact_under_concurrent_takes() {
    let p = policy(r#"policy p { limit "*" 20 per day allow "*" }"#);
    let store = Arc::new(MemoryBudgets::new());
    let charges = Arc::new(Charges::of(&p, "a", "b", Caller::default(), 0));
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let (store, charges) = (store.clone(), charges.clone());
            std::thread::spawn(move || {
                (0..25)
                    .filter(|_| block_on(store.take(&charges.charges)) == Room::Available)
                    .count()
            })
        })
        .collect();
    let allowed: usize = threads.into_iter().map(|t| t.join().unwrap_or(0)).sum();
    assert_eq!(allowed, 20);
}
