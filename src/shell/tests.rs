use super::*;

/// The simple commands of `line` as plain words (`?` for an unknown one).
fn commands(line: &str) -> Vec<String> {
    let read = read(line).unwrap_or_else(|e| panic!("{line:?}: {e}"));
    read.commands
        .iter()
        .map(|c| {
            c.words
                .iter()
                .map(|w| w.plain().unwrap_or("?").to_string())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

fn opaque(line: &str) -> bool {
    read(line).is_err()
}

#[test]
fn lists_pipelines_and_groups_are_read_into_their_simple_commands() {
    assert_eq!(commands("ls\nfind ~ -delete"), ["ls", "find ~ -delete"]);
    assert_eq!(commands("a; b && c || d | e"), ["a", "b", "c", "d", "e"]);
    assert_eq!(commands("(cd x; make) & { ls; }"), ["cd x", "make", "ls"]);
    assert_eq!(
        commands("if test -f x; then rm x; else touch x; fi"),
        ["test -f x", "rm x", "touch x"]
    );
    assert_eq!(commands("for f in a b; do echo $f; done"), ["echo ?"]);
    assert_eq!(commands("f() { rm -rf /; }; f"), ["rm -rf /", "f"]);
    assert_eq!(commands(""), Vec::<String>::new());
}

#[test]
fn substitutions_are_read_as_commands_of_their_own() {
    assert_eq!(commands("ls $(rm -rf /)"), ["rm -rf /", "ls ?"]);
    assert_eq!(commands("ls `rm -rf /`"), ["rm -rf /", "ls ?"]);
    assert_eq!(commands("echo \"$(id)\""), ["id", "echo ?"]);
    assert_eq!(commands("diff <(ls a) b"), ["ls a", "diff b"]);
    assert_eq!(commands("X=$(curl x) ls"), ["curl x", "ls"]);
}

#[test]
fn quotes_and_escapes_are_removed() {
    assert_eq!(commands("\"rm\" -rf /"), ["rm -rf /"]);
    assert_eq!(commands("'r'm -rf /"), ["rm -rf /"]);
    assert_eq!(commands("\\rm -rf /"), ["rm -rf /"]);
    assert_eq!(commands("echo \"a b\" 'c d'"), ["echo a b c d"]);
    assert_eq!(commands("echo \"\\$x \\a\""), ["echo $x \\a"]);
}

#[test]
fn expanding_words_are_unknown() {
    assert_eq!(commands("ls *.rs"), ["ls ?"]);
    assert_eq!(commands("ls {a,b}"), ["ls ?"]);
    assert_eq!(commands("find . -exec rm {} \\;"), ["find . -exec rm {} ;"]);
    assert_eq!(commands("ls $HOME"), ["ls ?"]);
    assert_eq!(commands("ls \"*\""), ["ls *"]);
    assert_eq!(commands("echo $'\\x72m'"), ["echo ?"]);
    let read = read_line("ls $(id); echo \"$X\" $Y \"$@\" \"$(id)\"");
    assert_eq!(
        read.commands[3].words,
        [
            Word::Plain("echo".into()),
            Word::OneUnknown,
            Word::Unknown,
            Word::Unknown,
            Word::OneUnknown
        ]
    );
}

#[test]
fn what_cannot_be_seen_through_is_opaque() {
    for line in [
        "$CMD -rf /",
        "$(which rm) -rf /",
        "r* -rf /",
        "eval \"rm -rf /\"",
        "exec rm -rf /",
        "source x.sh",
        ". x.sh",
        "sh -c 'rm -rf /'",
        "bash -c 'rm -rf /'",
        "/bin/bash -c x",
        "bash <<EOF\nrm -rf /\nEOF",
        "echo rm | sh",
        "bash",
        "[[ $(rm -rf /) ]]",
        "(( x = $(rm -rf /) ))",
        "echo ${X:-$(rm -rf /)}",
        "echo \"a ${X:-$(rm -rf /)}\"",
        "echo \"a $(( $(rm -rf /) ))\"",
        "ls 'unclosed",
        "ls )",
        "alias ls='rm -rf /'",
    ] {
        assert!(opaque(line), "{line:?} should be opaque");
    }
    assert!(!opaque("bash script.sh"));
}

#[test]
fn here_documents_run_their_substitutions() {
    assert_eq!(commands("cat <<EOF\n$(rm -rf /)\nEOF"), ["rm -rf /", "cat"]);
    assert_eq!(commands("cat <<'EOF'\n$(rm -rf /)\nEOF"), ["cat"]);
}

#[test]
fn redirections_that_write_are_collected() {
    let read =
        read("ls > a 2>&1 >> b 2> /dev/null < c &> d >| e").unwrap_or_else(|e| panic!("{e}"));
    let writes: Vec<&str> = read
        .writes
        .iter()
        .map(|w| w.plain().unwrap_or("?"))
        .collect();
    assert_eq!(writes, ["a", "b", "/dev/null", "d", "e"]);
    let read = read_line("echo x > $F");
    assert_eq!(read.writes, [Word::Unknown]);
    assert!(read_line("cd /etc && echo x > passwd").changes_folder);
    assert!(!read_line("echo x > passwd").changes_folder);
}

fn read_line(line: &str) -> CommandLine {
    read(line).unwrap_or_else(|e| panic!("{line:?}: {e}"))
}

#[test]
fn bounds_are_kept() {
    assert!(opaque(&"a".repeat(MAX_LINE_BYTES + 1)));
    assert!(opaque(&"ls;".repeat(MAX_COMMANDS + 1)));
    let deep = format!("{}ls{}", "$(".repeat(40), ")".repeat(40));
    assert!(opaque(&deep));
    let deep = format!("{}ls{}", "(".repeat(80), ")".repeat(80));
    assert!(opaque(&deep));
}

mod properties {
    use super::super::*;
    use proptest::prelude::*;

    const ALLOWED: [&str; 3] = ["git status", "git diff *", "ls *"];

    fn runs_only(line: &str) -> Option<bool> {
        let read = read(line).ok()?;
        let patterns: Vec<CommandPattern> = ALLOWED
            .iter()
            .map(|p| CommandPattern::parse(p).unwrap_or_else(|e| panic!("{e}")))
            .collect();
        let mut all = Some(true);
        for command in &read.commands {
            let mut one = Some(false);
            for p in &patterns {
                match p.matches(&command.words, false) {
                    Some(true) => one = Some(true),
                    None if one == Some(false) => one = None,
                    _ => {}
                }
            }
            match one {
                Some(false) => return Some(false),
                None => all = None,
                Some(true) => {}
            }
        }
        all
    }

    fn arg() -> impl Strategy<Value = String> {
        "[a-z][a-z0-9._/-]{0,8}"
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn any_text_is_read_or_refused_without_a_panic(line in "(?s).{0,200}") {
            let _ = read(&line);
        }

        #[test]
        fn shell_like_text_is_read_or_refused_without_a_panic(
            line in r"([a-z$`'\x22\\(){}\[\]|&;<> *?~=\n-]){0,80}"
        ) {
            let _ = read(&line);
        }

        #[test]
        fn commands_built_from_allowed_words_pass(
            parts in proptest::collection::vec((0usize..3, proptest::collection::vec(arg(), 0..3)), 1..5),
            seps in proptest::collection::vec(prop_oneof![Just(" ; "), Just(" && "), Just(" || "), Just(" | "), Just("\n")], 5),
        ) {
            let mut line = String::new();
            for (i, (which, args)) in parts.iter().enumerate() {
                if i > 0 {
                    line.push_str(seps[i % seps.len()]);
                }
                let command = match which {
                    0 => "git status".to_string(),
                    1 => format!("git diff {}", args.join(" ")),
                    _ => format!("ls {}", args.join(" ")),
                };
                line.push_str(command.trim_end());
            }
            prop_assert_eq!(runs_only(&line), Some(true), "{:?}", line);
        }

        #[test]
        fn one_unlisted_command_anywhere_fails(
            before in proptest::collection::vec(arg(), 0..3),
            name in "(rm|curl|find|git push|python3)",
            sep in prop_oneof![Just(" ; "), Just(" && "), Just(" | "), Just("\n")],
            wrap in 0usize..4,
        ) {
            let bad = format!("{name} x");
            let bad = match wrap {
                0 => bad,
                1 => format!("( {bad} )"),
                2 => format!("ls $({bad})"),
                _ => format!("ls `{bad}`"),
            };
            let line = format!("ls {}{sep}{bad}", before.join(" "));
            prop_assert_ne!(runs_only(&line), Some(true), "{:?}", line);
        }
    }
}

#[test]
fn the_longest_lines_are_read_quickly() {
    // Each shape at the length bound: many commands, deep quoting, long
    // words, many substitutions. Refused or read, each within a bound
    // that keeps a hook call interactive (debug builds are ~10x slower).
    let shapes = [
        "ls|".repeat(MAX_LINE_BYTES / 3),
        "a ".repeat(MAX_LINE_BYTES / 2),
        format!("echo \"{}\"", "$(ls)".repeat(MAX_LINE_BYTES / 6)),
        format!("echo {}", "'a'\"b\"".repeat(MAX_LINE_BYTES / 7)),
        "((((((((".repeat(MAX_LINE_BYTES / 8),
        "x=$(".repeat(MAX_LINE_BYTES / 4),
    ];
    for line in &shapes {
        let line = &line[..line.len().min(MAX_LINE_BYTES)];
        let started = std::time::Instant::now();
        let _ = read(line);
        let took = started.elapsed();
        assert!(
            took < std::time::Duration::from_secs(2),
            "{took:?} for {:?}...",
            &line[..20]
        );
    }
}
