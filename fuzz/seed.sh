#!/usr/bin/env bash
# Builds the seed corpora of the fuzz targets (fuzz/corpus/TARGET/) from the
# project's own policies, fixtures and listings. The corpora are not
# committed: run this before `cargo +nightly fuzz run TARGET`.
set -euo pipefail
cd "$(dirname "$0")"
root=..
corpus=corpus

seed_file() { # TARGET FILE
  local name
  name=$(sha1sum "$2" | cut -c1-16)
  cp "$2" "$corpus/$1/$name"
}
seed_text() { # TARGET TEXT
  local name
  name=$(printf '%s' "$2" | sha1sum | cut -c1-16)
  printf '%s' "$2" >"$corpus/$1/$name"
}

for t in parse_compile decide decide_explain paths uri shell canonical_json fmt fmt_parse jsonrpc claude_hook proxy; do
  mkdir -p "$corpus/$t"
done

# Policy text: every .mcppol of the project (bundled, fixtures, docs), but
# the one that spends the whole 64 MiB regex budget: it is slow by design
# (seconds under the sanitizer) and its mutants would crowd the run out.
while IFS= read -r -d '' f; do
  for t in parse_compile fmt fmt_parse decide_explain; do
    seed_file "$t" "$f"
  done
done < <(find "$root/policies" "$root/tests/fixtures" "$root/docs" -name '*.mcppol' -not -name 'regex_budget_exceeded.mcppol' -print0)

# Requests: arbitrary bytes; the policy tests' cases give the fuzzer words.
while IFS= read -r -d '' f; do
  seed_file decide "$f"
done < <(find "$root/policies" -name '*.mcppoltest' -print0)

# Paths: the contract's examples (semantics.md, "Path canonicalization").
for p in /srv/sandbox /srv/sandbox/a/../b a/b ./x /srv/sandbox/ /srv/sandboxed \
  /srv/sandbox/../x ../x /etc/passwd 'a\b' "$(printf 'x\001y')" "e$(printf '\xcc\x81')/../.."; do
  seed_text paths "$p/srv/sandbox"
done
# ~, edge white space, and the link tree's names (in, out, up, loop, abs).
for p in '~/x' '~' ' /srv/sandbox/a' '/srv/sandbox/a ' out/secret in/x up/sandbox/real loop/x abs/passwd in/../out; do
  seed_text paths "$p/srv/sandbox"
done

# URIs: the attack shapes of issue 22 and the RFC 3986 examples.
for u in 'file:///srv/sandbox/.	./secret.txt' 'file://localhost/etc/passwd' 'file:/etc/passwd' \
  'file:////etc/passwd' ' file:///etc/passwd' 'file:///e	tc/passwd' 'eXAMPLE://a/./b/../b/%63/%7bfoo%7d' \
  'file:///home/dev/project/%2E%2E/secret' 'docs/../readme.md' 'https://h:443/a?b#c'; do
  seed_text uri "$(printf '%b' "$u")"
done

# Shell command lines: the tricks of issue 28.
for c in 'ls\nfind ~ -delete' '"rm" -rf /' 'git diff --output=/tmp/x' 'ls $(rm -rf /)' 'ls `id`' \
  'echo x > /etc/motd 2>&1' 'bash <<EOF\nrm -rf /\nEOF' 'f() { rm -rf /; }; f' 'echo "${X:-$(id)}"'; do
  seed_text shell "$(printf '%b' "$c")"
done

# JSON: the tool listings and lock files, and a few odd values.
while IFS= read -r -d '' f; do
  seed_file canonical_json "$f"
done < <(find "$root/tests/fixtures" "$root/docs" \( -name '*.json' -o -name '*.lock' \) -print0)
seed_text canonical_json '{"name":"t","description":"d","inputSchema":{"type":"object"},"x":[1,2.5,1e400,-0,"\u00e9"]}'
seed_text canonical_json '[1e-7, 1e21, 0.1, 123456789012345678901234567890, "\ud83d\ude00"]'

# A server's output: chunks (after each client line) end at NUL bytes.
init='{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"s","version":"1"}}}'
list='{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"t","inputSchema":{"type":"object"}}],"nextCursor":"p2"}}'
list2='{"jsonrpc":"2.0","id":3,"result":{"tools":[{"name":"u"}]}}'
call='{"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"hi"}]}}'
printf '%s\n\0\0%s\n\0%s\n\0%s\n' "$init" "$list" "$list2" "$call" >"$corpus/jsonrpc/happy"
printf '%s\n\0\0{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"no"}}\n\0garbage\n{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}\n{"jsonrpc":"2.0","id":7,"method":"ping"}\n' "$init" >"$corpus/jsonrpc/odd"
printf '%s\n\0\0{"jsonrpc":"2.0","id":2,"result":{"tools":[]}}\n{"jsonrpc":"2.0","id":2,"result":{"tools":[]}}\n\0\0' "$init" >"$corpus/jsonrpc/duplicate"

# Proxy sessions, as text scripts (fuzz_targets/proxy.rs, `text_script`):
# `H`/`S` a line from the host/server, `h`/`s` NTH VARIANT an answer to the
# proxy's nth unanswered request on that side, `w`/`W` waits, `x` the
# server exits.
pinit='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{},"roots":{"listChanged":true}},"clientInfo":{"name":"h","version":"1"}}}'
pinit_plain='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"h","version":"1"}}}'
pinited='{"jsonrpc":"2.0","method":"notifications/initialized"}'
plist='{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}'
pcall() { # ID NAME ARGS
  printf '{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"%s","arguments":%s}}' "$1" "$2" "$3"
}
seed_text proxy "#!proxy
H $pinit
s 0 0
H $pinited
H $plist
s 0 7 more
s 0 6
H $(pcall 3 read '{"path":"/srv/work/a"}')
s 0 0
H $(pcall 4 write '{"path":"/srv/work/a","content":"x"}')
h 0 0
s 0 1
H $(pcall 5 delete_all '{}')
H $(pcall 6 echo '{"n":5}')
s 0 2
H $(pcall 7 echo '{"n":50}')
H {\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"resources/read\",\"params\":{\"uri\":\"file:///srv/work/a\"}}
s 0 0
H {\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"prompts/get\",\"params\":{\"name\":\"hello\"}}
s 0 0
S {\"jsonrpc\":\"2.0\",\"id\":\"r1\",\"method\":\"roots/list\"}
h 0 0
S {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}
s 0 15
H $(pcall 10 read '{"path":"/srv/work/b"}')
h 0 1
s 0 0"
seed_text proxy "#!proxy ask
H $pinit_plain
s 0 0
H $plist
s 0 7
H $(pcall 3 write '{"path":"/srv/work/a"}')
H $(pcall 4 unlisted '{}')
H $(pcall 5 secret_tool '{}')
H $(pcall 6 read '{"path":"/srv/work/secret.txt"}')
H $(pcall 7 read '{"path":"/srv/work/a"}')
H {\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":7}}
s 0 0
W"
seed_text proxy "#!proxy small
H $pinit
s 0 0
H $plist
s 0 7
H $(pcall 3 read '{"path":"/srv/work/a"}')
H $(pcall 3 read '{"path":"/srv/work/a"}')
H $(pcall 3 write '{"path":"/srv/work/a"}')
H {\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\"}
S {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"content\":[]}}
S {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"content\":[]}}
S {\"jsonrpc\":\"2.0\",\"id\":99,\"error\":{\"code\":-32603,\"message\":\"x\"}}
S garbage
H garbage
H [1,2]
H {\"jsonrpc\":\"2.0\",\"method\":\"tools/call\",\"params\":{\"name\":\"delete_all\"}}
x
H $(pcall 5 read '{"path":"/srv/work/a"}')"
seed_text proxy "#!proxy
H $pinit
s 0 0
H $plist
s 0 7
S {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"elicitation/create\",\"params\":{\"message\":\"m\",\"requestedSchema\":{\"type\":\"object\"}}}
S {\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"sampling/createMessage\",\"params\":{\"messages\":[],\"maxTokens\":1}}
S {\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":2}}
h 0 0
H $(pcall 3 write '{"path":"/srv/work/a"}')
w
W
S {\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{\"content\":[]}}
S $(head -c 5000 /dev/zero | tr '\0' x)"
# A key twice: the proxy reads the last, a server (or host) may read the first.
seed_text proxy "#!proxy
H $pinit
s 0 0
H {\"jsonrpc\":\"2.0\",\"method\":\"tools/call\",\"params\":{\"name\":\"delete_all\",\"arguments\":{}},\"method\":\"notifications/progress\"}
S {\"jsonrpc\":\"2.0\",\"method\":\"elicitation/create\",\"params\":{},\"method\":\"notifications/message\"}
H {\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"delete_all\",\"name\":\"read\",\"arguments\":{\"path\":\"/srv/work/secret\",\"path\":\"/srv/work/a\"}}}"

# Claude Code hook events (recorded payloads); taint files after a NUL.
while IFS= read -r -d '' f; do
  seed_file claude_hook "$f"
done < <(find "$root/tests/fixtures/claude" -name '*.json' -print0)
printf '\0mcppol taint 1\n"web"\n"github"\n' >"$corpus/claude_hook/taint"

for t in "$corpus"/*; do
  echo "$(basename "$t"): $(find "$t" -type f | wc -l) seeds"
done
