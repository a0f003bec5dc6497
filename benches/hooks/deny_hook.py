"""The hook a user would otherwise write for Claude Code, in Python: read
the PreToolUse event on stdin, check it against a deny list (a JSON file
given as the first argument), exit 2 with the reason on stderr to block,
exit 0 with no output to let Claude Code's own permissions decide.
benches/hooks.sh times it beside `mcppol hook claude`."""

import fnmatch
import json
import re
import sys


def main():
    event = json.load(sys.stdin)
    with open(sys.argv[1], encoding="utf-8") as f:
        deny = json.load(f)["deny"]
    tool = event.get("tool_name", "")
    tool_input = event.get("tool_input") or {}
    command = tool_input.get("command", "") if isinstance(tool_input, dict) else ""
    for entry in deny:
        if not fnmatch.fnmatchcase(tool, entry["tool"]):
            continue
        pattern = entry.get("command")
        if pattern is None or re.search(pattern, command):
            print(f"blocked by {entry['id']}", file=sys.stderr)
            return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
