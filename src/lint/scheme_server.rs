//! `scheme_as_server`: a resource target whose first segment is a URI
//! scheme. A target splits at its first `/`, so `resource "file:///etc/*"`
//! names server `file:` and URI `//etc/*`; no server has that id and the
//! rule protects nothing.

use super::{Ctx, SCHEME_AS_SERVER};
use crate::syntax::{TargetAst, TargetKind};

pub(super) fn check(cx: &mut Ctx<'_>) {
    let mut found = Vec::new();
    for rule in &cx.rules {
        if rule.ast.kind != TargetKind::Resource {
            continue;
        }
        for target in &rule.ast.targets {
            let TargetAst::Pattern(p) = target else {
                continue;
            };
            let Some((server, rest)) = p.node.split_once('/') else {
                continue;
            };
            if server.ends_with(':') || (server.contains(':') && rest.starts_with('/')) {
                found.push((p.span, p.node.clone(), server.to_string(), rest.to_string()));
            }
        }
    }
    for (span, text, server, rest) in found {
        let diagnostic = cx
            .warning(
                &SCHEME_AS_SERVER,
                span,
                format!(
                    "\"{}\" names server `{}` and URI `{}`: a target splits at its first `/`, so the scheme is read as a server id and the rule protects nothing",
                    text.escape_debug(),
                    server.escape_debug(),
                    rest.escape_debug()
                ),
            )
            .with_label("the scheme is taken for a server")
            .with_help(format!(
                "put the server first: \"*/{0}\" for every server, or \"SERVER/{0}\" with the server's id",
                text.escape_debug()
            ));
        cx.emit(&SCHEME_AS_SERVER, diagnostic);
    }
}
