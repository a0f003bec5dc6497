//! The vocabulary every layer shares: what a request is, what a decision
//! and its reasons are, the kinds of target, a rule's effect, where a
//! thing is written (`Span`), how a number is held, the host predicate
//! type.
//!
//! It depends on nothing else in the crate, so the compiled policy
//! (`policy`), the compiler and the evaluator can each be read and tested
//! against it alone: `policy` never needs the evaluator to name a request.
//! The public names are re-exported at the crate root (`mcppol::Request`,
//! `mcppol::Decision`, ...).

mod approval;
mod decision;
mod host;
mod kind;
mod links;
mod number;
mod request;
mod span;

pub use approval::ToolApproval;
pub use decision::{Decision, Reason, Source, Verdict};
pub use host::{HostFn, HostPredicate, HostPredicates};
pub use kind::{Effect, TargetKind};
pub use links::{LinkResolver, Links};
pub(crate) use number::ExactNumber;
pub use request::Request;
pub use span::Span;
