//! The checks a bundle's files pass, at build and at every verify: what
//! `mcppol check` and the store refuse, on texts held in memory.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::{is_policy_path, BundleError, FileText, Step, MAX_POLICIES};
use crate::diagnostics::codes;
use crate::syntax::Span;
use crate::{Diagnostic, LintOptions, LoadOptions, Lock, Policy, Severity, SourceFile};

/// The policies of a bundle's files, compiled, by name.
pub(crate) struct Checked {
    /// Every policy, with the path of the file that defines it and the
    /// digest of that file.
    pub(crate) policies: BTreeMap<String, (Arc<Policy>, String)>,
    /// The warnings of the policy files (a build prints them).
    pub(crate) warnings: Vec<Diagnostic>,
}

/// Checks every file: a policy file as `mcppol check` does (syntax,
/// compile, lints; errors refuse, warnings are kept), a lock file as
/// `--lock` reads it, and the whole as the store loads a folder (a file
/// must define a policy, and a name only one file may define).
pub(crate) fn check_files(files: &[FileText]) -> Result<Checked, BundleError> {
    let load = LoadOptions::default();
    let lint = LintOptions::default();
    let mut errors = Vec::new();
    let mut warnings = Vec::new();
    let mut policies: BTreeMap<String, (Arc<Policy>, String)> = BTreeMap::new();
    for file in files {
        if !is_policy_path(&file.path) {
            if let Err(e) = Lock::parse(&file.text) {
                return Err(BundleError::new(
                    Step::Policy,
                    format!("lock file `{}` does not read: {e}", file.path),
                )
                .help("write it with `mcppol lock --tools FILE`"));
            }
            continue;
        }
        let diagnostics = crate::check_text(&file.path, &file.text, &load, &lint);
        let (bad, fine): (Vec<Diagnostic>, Vec<Diagnostic>) = diagnostics
            .into_iter()
            .partition(|d| d.severity == Severity::Error);
        warnings.extend(fine);
        if !bad.is_empty() {
            errors.extend(bad);
            continue;
        }
        let source = SourceFile::new(file.path.clone(), file.text.clone());
        let set = match crate::compile::load(Arc::clone(&source), &load) {
            Ok(set) => set,
            Err(e) => {
                errors.extend(e.diagnostics);
                continue;
            }
        };
        if set.iter().next().is_none() {
            errors.push(
                Diagnostic::error(
                    &source,
                    codes::STORE_NO_POLICY,
                    Span::default(),
                    format!("`{}` defines no policy", file.path),
                )
                .with_help("a policy file must define at least one policy"),
            );
        }
        for policy in set.iter() {
            if let Some((_, other)) = policies.get(policy.name.as_str()) {
                errors.push(
                    Diagnostic::error(
                        &source,
                        codes::STORE_DUPLICATE_POLICY,
                        policy.name_span,
                        format!("policy `{}` is already defined in `{other}`", policy.name),
                    )
                    .with_label("defined again here")
                    .with_help("a policy name may be defined in one file of the folder only"),
                );
                continue;
            }
            policies.insert(
                policy.name.to_string(),
                (Arc::clone(policy), file.path.clone()),
            );
        }
        if policies.len() > MAX_POLICIES {
            return Err(BundleError::new(
                Step::Policy,
                format!("the files define more than {MAX_POLICIES} policies"),
            ));
        }
    }
    if !errors.is_empty() {
        let files: std::collections::BTreeSet<String> =
            errors.iter().map(|d| d.source.name.clone()).collect();
        let mut error = BundleError::new(
            Step::Policy,
            format!(
                "{} does not check ({} error{})",
                files
                    .iter()
                    .map(|f| format!("`{f}`"))
                    .collect::<Vec<_>>()
                    .join(", "),
                errors.len(),
                if errors.len() == 1 { "" } else { "s" }
            ),
        )
        .help("fix the policy and run `mcppol check` on the folder");
        error.diagnostics = errors;
        return Err(error);
    }
    Ok(Checked { policies, warnings })
}
