// The hook a user would otherwise write for Claude Code, in Node: read the
// PreToolUse event on stdin, check it against a deny list (a JSON file
// given as the first argument), exit 2 with the reason on stderr to block,
// exit 0 with no output to let Claude Code's own permissions decide.
// benches/hooks.sh times it beside `mcppol hook claude`.
"use strict";
const fs = require("fs");

// A glob with `*` only, as the Python hook's fnmatch is used.
function glob(pattern) {
  const escaped = pattern.replace(/[.+?^${}()|[\]\\]/g, "\\$&").replace(/\*/g, ".*");
  return new RegExp(`^${escaped}$`);
}

function main() {
  const event = JSON.parse(fs.readFileSync(0, "utf8"));
  const deny = JSON.parse(fs.readFileSync(process.argv[2], "utf8")).deny;
  const tool = event.tool_name || "";
  const input = event.tool_input || {};
  const command = typeof input.command === "string" ? input.command : "";
  for (const entry of deny) {
    if (!glob(entry.tool).test(tool)) continue;
    if (entry.command === undefined || new RegExp(entry.command).test(command)) {
      process.stderr.write(`blocked by ${entry.id}\n`);
      return 2;
    }
  }
  return 0;
}

process.exitCode = main();
