//! The values of the path and shell tests: a root made canonical, a list
//! of command patterns read.

use super::Compiler;
use crate::diagnostics::{codes, Diagnostic};
use crate::policy::{PathRoot, RootError, Test};
use crate::shell::CommandPattern;
use crate::syntax::{self, SelectorAst};

impl Compiler<'_, '_> {
    /// The root of `inside`, `escapes` or `writes inside`, canonical.
    pub(super) fn root(&mut self, root: &syntax::Spanned<String>) -> Option<PathRoot> {
        match PathRoot::from_written(&root.node) {
            Ok(r) => Some(r),
            Err(why) => {
                let help = match why {
                    RootError::ClimbsOutOfCwd => {
                        "name a folder at or below `$CWD`, such as \"$CWD/src\", or write an absolute path"
                    }
                    RootError::Path(_) => "write an absolute path such as \"/srv/sandbox\"",
                };
                self.push(
                    Diagnostic::error(
                        self.source,
                        codes::COMPILE_BAD_ROOT,
                        root.span,
                        format!("`{}` cannot be a root: {why}", root.node.escape_debug()),
                    )
                    .with_label("bad root")
                    .with_help(help),
                );
                None
            }
        }
    }

    /// `runs [only] [...]`: each pattern read.
    pub(super) fn runs(
        &mut self,
        selector: &SelectorAst,
        only: bool,
        patterns: &[syntax::Spanned<String>],
    ) -> Option<Test> {
        let word = if only { "runs only" } else { "runs" };
        let operand = self.value_operand(selector, word);
        let mut compiled = Vec::with_capacity(patterns.len());
        for pattern in patterns {
            match CommandPattern::parse(&pattern.node) {
                Ok(p) => compiled.push(p),
                Err(why) => self.push(
                    Diagnostic::error(
                        self.source,
                        codes::COMPILE_BAD_TEST,
                        pattern.span,
                        format!("`{}` cannot be a command pattern: {why}", pattern.node.escape_debug()),
                    )
                    .with_label("bad pattern")
                    .with_help("write the command's words separated by spaces, `*` alone for any further words: \"git diff *\""),
                ),
            }
        }
        if compiled.len() != patterns.len() {
            return None;
        }
        Some(Test::Runs {
            operand: operand?,
            only,
            patterns: compiled.into_boxed_slice(),
        })
    }
}
