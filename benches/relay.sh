#!/usr/bin/env bash
# The relay side by side (docs/performance.md, "The relay"): installs the
# `mcp-proxy` crate once into .bench/mcp-proxy (git-ignored, its own
# target dir, nothing global), server-everything into .e2e/node, then runs
# benches/relay.rs. Run from anywhere, on an idle machine (load under 1.5).
#
#   benches/relay.sh                       # 2,000 calls per route and mode
#   MCPPOL_BENCH_CALLS=500 benches/relay.sh
set -euo pipefail
cd "$(dirname "$0")/.."

version="0.6.0"
root=".bench/mcp-proxy"
if ! grep -qs "mcp-proxy $version" "$root/.crates.toml"; then
  # Without its default features (OpenTelemetry, OAuth, OpenAPI,
  # WebSocket, discovery): none is on a stdio backend's path.
  CARGO_TARGET_DIR=.bench/mcp-proxy-target cargo install --locked \
    --no-default-features --root "$root" "mcp-proxy@$version"
fi
everything=".e2e/node/node_modules/@modelcontextprotocol/server-everything/package.json"
if ! [ -f "$everything" ]; then
  .ci/e2e-deps
fi
MCPPOL_BENCH_MCP_PROXY="$(realpath "$root/bin/mcp-proxy")" \
  cargo bench --locked --bench relay
