#!/usr/bin/env bash
# Builds the mcppol npm package from the checkout and runs its tests with
# node's own test runner: `npm ci` (the committed package-lock.json) into
# bindings/node/node_modules, nothing global; `npm run build` (the native
# addon, release; dev with MCPPOL_EXT_PROFILE=dev); `npm test`. Needs Node.js 18 or later and Rust.
set -euo pipefail
cd "$(dirname "$0")"

if ! command -v npm >/dev/null 2>&1; then
  echo "npm is missing: install Node.js 18 or later (https://nodejs.org)" >&2
  exit 1
fi

npm ci --no-audit --no-fund --silent
# MCPPOL_EXT_PROFILE=dev (what .ci/run sets) builds the addon in the dev
# profile: the same code, compiled in a third of the time; a user's build
# and the package's numbers are release.
if [ "${MCPPOL_EXT_PROFILE:-release}" = dev ]; then
  npm run build:debug --silent
else
  npm run build --silent
fi
npm test
