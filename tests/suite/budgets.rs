//! Budgets (`limit`) through the governed call: only allowed calls count,
//! a spent budget denies with `source: limit` after deny and before ask,
//! an ask settled to allow counts, pipelines given one store share it, and
//! the count is exact under concurrent calls.

#![cfg(feature = "pipeline")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use mcppol::mcp::{text_result, FakeServer, MemoryTransport};
use mcppol::pipeline::*;
use mcppol::{Budgets, MemoryBudgets, PolicySet, Reason, Source};
use serde_json::json;

fn mail() -> FakeServer {
    FakeServer::new()
        .tool(json!({"name": "send_mail"}), |_| Ok(text_result("sent")))
        .tool(json!({"name": "merge"}), |_| Ok(text_result("merged")))
        .tool(json!({"name": "drop"}), |_| Ok(text_result("dropped")))
}

const POLICY: &str = r#"policy t {
  limit sends: "*/send_*", "*/merge", "*/drop" 3 per day per principal
  deny "mail/drop"
  ask "mail/merge"
  allow "mail/send_mail"
}"#;

fn pipeline(fake: &FakeServer, budgets: Arc<dyn Budgets>) -> PipelineBuilder {
    let set = PolicySet::from_text("t.mcppol", POLICY)
        .map_err(|e| e.render(false))
        .unwrap();
    let policy = set.iter().next().unwrap().clone();
    Pipeline::builder(
        "mail",
        Arc::new(MemoryTransport::new(fake.clone())),
        PolicySource::Fixed(policy),
    )
    .budgets(budgets)
}

fn ann() -> CallOptions {
    CallOptions::default().principal("ann")
}

fn sent(fake: &FakeServer) -> usize {
    fake.requests()
        .iter()
        .filter(|(m, _)| m == "tools/call")
        .count()
}

#[tokio::test]
async fn a_spent_budget_denies_with_source_limit_and_sends_nothing() {
    let fake = mail();
    let p = pipeline(&fake, Arc::new(MemoryBudgets::new()))
        .build()
        .unwrap();
    for _ in 0..3 {
        p.call_tool("send_mail", json!({}), &ann()).await.unwrap();
    }
    let e = p
        .call_tool("send_mail", json!({}), &ann())
        .await
        .unwrap_err();
    let d = e.decision.clone().unwrap();
    assert_eq!(
        (d.source, d.reason, d.rule_id.as_deref()),
        (Source::Limit, Reason::LimitExceeded, Some("sends"))
    );
    assert_eq!(e.reason, ErrorReason::Policy(Reason::LimitExceeded));
    assert_eq!(sent(&fake), 3);
    // Per principal: bob has his own three.
    let bob = CallOptions::default().principal("bob");
    p.call_tool("send_mail", json!({}), &bob).await.unwrap();
}

#[tokio::test]
async fn deny_comes_first_and_denied_calls_never_count() {
    let fake = mail();
    let p = pipeline(&fake, Arc::new(MemoryBudgets::new()))
        .build()
        .unwrap();
    for _ in 0..5 {
        let e = p.call_tool("drop", json!({}), &ann()).await.unwrap_err();
        assert_eq!(e.decision.unwrap().source, Source::Deny);
    }
    // No approver: the ask is a deny (no_approver), which does not count.
    for _ in 0..5 {
        let e = p.call_tool("merge", json!({}), &ann()).await.unwrap_err();
        assert_eq!(e.decision.unwrap().reason, Reason::NoApprover);
    }
    for _ in 0..3 {
        p.call_tool("send_mail", json!({}), &ann()).await.unwrap();
    }
    // Spent: the ask is now refused by the budget, before the default.
    let e = p.call_tool("merge", json!({}), &ann()).await.unwrap_err();
    assert_eq!(e.decision.unwrap().source, Source::Limit);
}

#[tokio::test]
async fn an_ask_settled_to_allow_counts_and_a_spent_budget_is_never_asked_about() {
    let fake = mail();
    let asked = Arc::new(AtomicUsize::new(0));
    let seen = asked.clone();
    let p = pipeline(&fake, Arc::new(MemoryBudgets::new()))
        .approver(move |_req: ApprovalRequest| {
            seen.fetch_add(1, Ordering::SeqCst);
            async { Ok(Approval::AllowOnce) }
        })
        .build()
        .unwrap();
    for _ in 0..3 {
        p.call_tool("merge", json!({}), &ann()).await.unwrap();
    }
    let e = p.call_tool("merge", json!({}), &ann()).await.unwrap_err();
    assert_eq!(e.decision.unwrap().source, Source::Limit);
    let e = p
        .call_tool("send_mail", json!({}), &ann())
        .await
        .unwrap_err();
    assert_eq!(e.decision.unwrap().source, Source::Limit);
    assert_eq!(asked.load(Ordering::SeqCst), 3);
    assert_eq!(sent(&fake), 3);
}

#[tokio::test]
async fn pipelines_given_one_store_share_the_budget_exactly_under_concurrency() {
    let budgets: Arc<dyn Budgets> = Arc::new(MemoryBudgets::new());
    let (fa, fb) = (mail(), mail());
    let a = Arc::new(pipeline(&fa, budgets.clone()).build().unwrap());
    let b = Arc::new(pipeline(&fb, budgets).build().unwrap());
    let mut tasks = Vec::new();
    for i in 0..60 {
        let p = if i % 2 == 0 { a.clone() } else { b.clone() };
        tasks.push(tokio::spawn(async move {
            p.call_tool("send_mail", json!({}), &ann()).await.is_ok()
        }));
    }
    let mut allowed = 0;
    for t in tasks {
        if t.await.unwrap() {
            allowed += 1;
        }
    }
    assert_eq!(allowed, 3);
    assert_eq!(sent(&fa) + sent(&fb), 3);
}

#[tokio::test]
async fn a_store_that_cannot_count_denies() {
    struct Down;
    impl Budgets for Down {
        fn take<'a>(&'a self, _: &'a [mcppol::budget::Charge]) -> mcppol::budget::BudgetFuture<'a> {
            Box::pin(async { mcppol::budget::Room::Unavailable })
        }
        fn check<'a>(
            &'a self,
            _: &'a [mcppol::budget::Charge],
        ) -> mcppol::budget::BudgetFuture<'a> {
            Box::pin(async { mcppol::budget::Room::Unavailable })
        }
    }
    let fake = mail();
    let p = pipeline(&fake, Arc::new(Down)).build().unwrap();
    let e = p
        .call_tool("send_mail", json!({}), &ann())
        .await
        .unwrap_err();
    let d = e.decision.unwrap();
    assert_eq!((d.source, d.reason), (Source::Limit, Reason::LimitExceeded));
    assert_eq!(sent(&fake), 0);
}
