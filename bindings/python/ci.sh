#!/usr/bin/env bash
# Builds the Python package from this checkout into a local virtualenv
# (.e2e/pyvenv, git-ignored) and runs its tests: the API, its errors, the
# conformance cases (tests/fixtures/conformance) and the docs' examples.
# Run from anywhere; needs python3 (3.9 or later) with venv, and Rust.
set -euo pipefail
cd "$(dirname "$0")/../.."

# The extension's Rust lints (the root `cargo clippy` covers only the
# default members of the workspace).
cargo clippy --locked --quiet -p mcppol-python -- -D warnings

venv=".e2e/pyvenv"
if ! command -v python3 >/dev/null 2>&1; then
  echo "python3 is missing: install Python 3.9 or later" >&2
  exit 1
fi
if ! [ -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
# The build backend runs `maturin` from PATH.
export PATH="$PWD/$venv/bin:$PATH"
pip=("$venv/bin/pip" install --quiet --disable-pip-version-check)
# Pinned test tools (the build backend is pinned for the build below too).
"${pip[@]}" "maturin==1.16.0" "pytest==9.2.0" "mcp==2.3.0" \
  "langchain==1.5.0" "langgraph==1.2.22" "openai-agents==0.24.0"

# The real MCP servers mcppol.mcp's end-to-end test runs (.ci/e2e-deps
# installs the same pinned versions; this makes the script work alone).
servers_version="2026.8.31"
for server in server-everything server-memory; do
  installed=".e2e/node/node_modules/@modelcontextprotocol/$server/package.json"
  if ! [ -f "$installed" ] || ! grep -q "\"version\": \"$servers_version\"" "$installed"; then
    if ! command -v npm >/dev/null 2>&1; then
      echo "npm is missing: install Node.js 18 or later (https://nodejs.org)" >&2
      exit 1
    fi
    mkdir -p .e2e/node
    npm install --prefix .e2e/node --no-audit --no-fund --silent \
      "@modelcontextprotocol/$server@$servers_version"
  fi
done

# The extension, built (release, abi3) and installed as a user would.
# MCPPOL_EXT_PROFILE=dev (what .ci/run sets) builds it in the dev profile:
# the same code in a third of the time.
if [ "${MCPPOL_EXT_PROFILE:-release}" = dev ]; then
  export MATURIN_PEP517_ARGS="--profile dev"
fi
start=$(date +%s)
"${pip[@]}" --no-build-isolation --force-reinstall --no-deps ./bindings/python
echo "bindings/python: built and installed in $(( $(date +%s) - start )) s"

# pytest exits 5 when it collected no test: that is a failure here.
status=0
"$venv/bin/python" -m pytest -q -p no:cacheprovider bindings/python/tests || status=$?
if [ "$status" -eq 5 ]; then
  echo "bindings/python: pytest collected no test" >&2
  exit 1
fi
exit "$status"
