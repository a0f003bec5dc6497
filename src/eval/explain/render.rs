//! An explanation as text (one line a step) and as JSON.

use serde_json::{json, Value};

use crate::policy::Policy;
use crate::syntax::Span;

use super::trace::Explanation;
use crate::escape::escape;
use crate::eval::Tri;

impl Explanation {
    /// `file:line:col` of a span in the policy's source.
    fn location(policy: &Policy, span: Span) -> (usize, usize) {
        policy.source.line_col(span.start)
    }

    /// The explanation as text, one line a step (`file:line:col: ...`),
    /// predicate notes indented below their rule, the decision last. Every
    /// text that a request or a policy supplies is escaped
    /// (as `crate::escape` does): a tool name or an argument holding a newline or
    /// a terminal escape cannot forge a line.
    pub fn render(&self, policy: &Policy) -> String {
        let file = escape(&policy.source.name);
        let mut out = String::new();
        if let (Some(span), Some(roots)) = (self.roots, policy.roots()) {
            let (line, col) = Self::location(policy, span);
            let list: Vec<String> = roots.iter().map(|r| format!("{r:?}")).collect();
            out.push_str(&format!(
                "{file}:{line}:{col}: roots: pinned to {} (the folders a server may be given; no part of this decision)\n",
                list.join(", ")
            ));
        }
        for step in &self.steps {
            let (line, col) = Self::location(policy, step.span);
            let who = match &step.rule_id {
                Some(id) => format!("{} {}", step.stage.as_str(), escape(id)),
                None => step.stage.as_str().to_string(),
            };
            out.push_str(&format!(
                "{file}:{line}:{col}: {who}: {}: {}\n",
                step.outcome.as_str().replace('_', " "),
                escape(&step.detail)
            ));
            for note in &step.notes {
                let (line, col) = Self::location(policy, note.span);
                out.push_str(&format!(
                    "    {file}:{line}:{col}: `{}` {}: {}\n",
                    escape(&note.text),
                    tri_phrase(note.result),
                    escape(&note.saw)
                ));
            }
        }
        if self.not_considered > 0 {
            out.push_str(&format!(
                "({} later rule(s) not considered: the decision was made)\n",
                self.not_considered
            ));
        }
        let d = &self.decision;
        let at = match d.rule_span {
            Some(span) => {
                let (line, col) = Self::location(policy, span);
                format!(" at {file}:{line}:{col}")
            }
            None => String::new(),
        };
        out.push_str(&format!(
            "decision: {} (source: {}, reason: {}, rule_id: {}){at}\n",
            d.decision.as_str(),
            d.source.as_str(),
            d.reason.as_str(),
            escape(d.rule_id.as_deref().unwrap_or("null")),
        ));
        out
    }

    /// The explanation as JSON: `{"policy", "steps": [...], "not_considered",
    /// "decision": {eval's fields, "line"}}`.
    pub fn to_json(&self, policy: &Policy) -> Value {
        let file = &policy.source.name;
        let steps: Vec<Value> = self
            .steps
            .iter()
            .map(|s| {
                let (line, column) = Self::location(policy, s.span);
                json!({
                    "stage": s.stage.as_str(),
                    "rule_id": s.rule_id.as_deref(),
                    "outcome": s.outcome.as_str(),
                    "detail": s.detail,
                    "file": file,
                    "line": line,
                    "column": column,
                    "predicates": s.notes.iter().map(|n| {
                        let (line, column) = Self::location(policy, n.span);
                        json!({
                            "text": n.text,
                            "result": tri_str(n.result),
                            "saw": n.saw,
                            "line": line,
                            "column": column,
                        })
                    }).collect::<Vec<_>>(),
                })
            })
            .collect();
        let mut decision = self.decision.to_json();
        if let (Value::Object(map), Some(span)) = (&mut decision, self.decision.rule_span) {
            let (line, column) = Self::location(policy, span);
            map.insert("file".into(), Value::from(file.as_str()));
            map.insert("line".into(), Value::from(line));
            map.insert("column".into(), Value::from(column));
        }
        let mut out = json!({
            "policy": self.policy,
            "steps": steps,
            "not_considered": self.not_considered,
            "decision": decision,
        });
        if let (Value::Object(map), Some(roots)) = (&mut out, policy.roots()) {
            map.insert("roots".into(), json!(roots));
        }
        out
    }
}

fn tri_str(t: Tri) -> &'static str {
    match t {
        Tri::True => "true",
        Tri::False => "false",
        Tri::Failed => "failed",
    }
}

fn tri_phrase(t: Tri) -> &'static str {
    match t {
        Tri::True => "is true",
        Tri::False => "is false",
        Tri::Failed => "failed",
    }
}
