"""Times Claude Code hooks the way Claude Code runs them: a command string
through `sh -c`, the PreToolUse event on stdin, one whole process per call.
Run by benches/hooks.sh (which builds the release binary first):

    python3 benches/hooks/time_hooks.py --mcppol target/release/mcppol [--runs 300]

Writes a 100-rule policy (the shape of benches/claude_hook.rs: shell
regexes, `$CWD` paths, taint, MCP servers) and a 100-entry deny list for
the minimal Python and Node hooks into a temporary folder, checks that each
hook allows the benchmark's call and blocks a denied one, then runs the
commands in turn (A B C D, A B C D, ...) so that drift in the machine's
speed falls on all of them alike, and prints the median, p90 and p99 wall
time of each, with `true` through `sh -c` as the floor. Each call is
timed from just before posix_spawn to just after waitpid."""

import argparse
import json
import os
import shlex
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SESSION = "5f0c8d2e-1b7a-4c39-9a51-0c6b2f1e7d11"


def policy(n):
    """The 100-rule policy of benches/claude_hook.rs."""
    out = ["policy bench {", "  default ask", "  allow_new_tools on"]
    for i in range(n):
        kind = i % 5
        if kind == 0:
            out.append(f'  deny shell_{i}: "claude/Bash" when args.command matches /\\bcmd{i}\\s+-[a-z]*f/')
        elif kind == 1:
            out.append(
                f'  deny edit_{i}: "claude/Write", "claude/Edit" when args.file_path escapes "$CWD/area{i}"'
                f" and args.file_path matches /area{i}/"
            )
        elif kind == 2:
            out.append(f'  deny send_{i}: "server{i}/send_*" when tainted(ignore: ["docs"])')
        elif kind == 3:
            out.append(f'  ask write_{i}: "server{i}/create_*", "server{i}/update_*"')
        else:
            out.append(f'  allow read_{i}: "server{i}/get_*", "server{i}/list_*"')
    out.append('  allow edits: "claude/Edit", "claude/Write" when args.file_path inside "$CWD"')
    out.append('  allow shell: "claude/Bash" when args.command matches /^(ls|cargo test)( |$)/')
    out.append("}")
    return "\n".join(out) + "\n"


def deny_list(n):
    """The same checks as a plain deny list: command regexes for Bash, tool
    names (globs) for the rest."""
    deny = []
    for i in range(n):
        if i % 2 == 0:
            deny.append({"id": f"shell_{i}", "tool": "Bash", "command": f"\\bcmd{i}\\s+-[a-z]*f"})
        else:
            deny.append({"id": f"send_{i}", "tool": f"mcp__server{i}__send_*"})
    return {"deny": deny}


def event(command):
    return json.dumps(
        {
            "session_id": SESSION,
            "transcript_path": f"/home/dev/.claude/projects/p/{SESSION}.jsonl",
            "cwd": "/home/dev/project",
            "permission_mode": "default",
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": command, "description": "bench"},
            "tool_use_id": "toolu_01",
        }
    ).encode()


def spawn(command, stdin_bytes, out_fd, err_fd):
    """One `sh -c COMMAND` with `stdin_bytes` on its stdin; (status, ns)."""
    r, w = os.pipe()
    os.write(w, stdin_bytes)  # far under the pipe's buffer
    os.close(w)
    actions = [
        (os.POSIX_SPAWN_DUP2, r, 0),
        (os.POSIX_SPAWN_DUP2, out_fd, 1),
        (os.POSIX_SPAWN_DUP2, err_fd, 2),
    ]
    start = time.perf_counter_ns()
    pid = os.posix_spawn("/bin/sh", ["sh", "-c", command], os.environ, file_actions=actions)
    _, status = os.waitpid(pid, 0)
    elapsed = time.perf_counter_ns() - start
    os.close(r)
    return os.waitstatus_to_exitcode(status), elapsed


def run_once(command, stdin_bytes):
    """Status and output of one call, for the checks."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        status, _ = spawn(command, stdin_bytes, out.fileno(), err.fileno())
        out.seek(0)
        err.seek(0)
        return status, out.read().decode(errors="replace"), err.read().decode(errors="replace")


def percentile(sorted_ns, p):
    index = min(len(sorted_ns) - 1, max(0, round(p / 100 * len(sorted_ns) + 0.5) - 1))
    return sorted_ns[index]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mcppol", required=True, help="the mcppol binary (a release build)")
    parser.add_argument("--runs", type=int, default=300, help="counted calls of each hook")
    parser.add_argument("--warmup", type=int, default=20, help="calls of each not counted, first")
    args = parser.parse_args()
    mcppol = os.path.abspath(args.mcppol)
    node = shutil.which("node")
    # The interpreter itself, not a version manager's shim script.
    python = os.path.realpath(sys.executable)

    with tempfile.TemporaryDirectory(prefix="mcppol-hooks-") as tmp:
        policy_file = os.path.join(tmp, "bench.mcppol")
        with open(policy_file, "w", encoding="utf-8") as f:
            f.write(policy(100))
        deny_file = os.path.join(tmp, "deny.json")
        with open(deny_file, "w", encoding="utf-8") as f:
            json.dump(deny_list(100), f)
        state = os.path.join(tmp, "state")
        q = shlex.quote
        # As `mcppol hook claude --print-settings` writes it.
        commands = [
            ("mcppol hook claude", f"{q(mcppol)} hook claude --policy {q(policy_file)} --state-dir {q(state)} || exit 2"),
            ("python3 deny-list hook", f"{q(python)} {q(os.path.join(HERE, 'deny_hook.py'))} {q(deny_file)}"),
        ]
        if node:
            commands.append(("node deny-list hook", f"{q(node)} {q(os.path.join(HERE, 'deny_hook.js'))} {q(deny_file)}"))
        else:
            print("node not found: the Node hook is left out", file=sys.stderr)
        commands.append(("true (the floor)", "true"))

        allowed = event("ls -la src")
        denied = event("cmd10 -rf /tmp/x")
        for name, command in commands[:-1]:
            status, out, err = run_once(command, allowed)
            if status != 0:
                sys.exit(f"{name}: the allowed call exited {status}: {out}{err}")
            # Claude Code blocks on exit 2, or on exit 0 with the deny JSON.
            status, out, err = run_once(command, denied)
            if status != 2 and not (status == 0 and '"permissionDecision":"deny"' in out):
                sys.exit(f"{name}: the denied call was not blocked ({status}): {out}{err}")

        devnull = os.open(os.devnull, os.O_WRONLY)
        times = {name: [] for name, _ in commands}
        for round_index in range(args.warmup + args.runs):
            for name, command in commands:
                status, ns = spawn(command, allowed, devnull, devnull)
                if status != 0:
                    sys.exit(f"{name}: exited {status} in the timed runs")
                if round_index >= args.warmup:
                    times[name].append(ns)
        os.close(devnull)

    with open("/proc/loadavg", encoding="ascii") as f:
        load = f.read().split()[0]
    print(f"{args.runs} calls each (after {args.warmup} not counted), in turn; "
          f"PreToolUse Bash, 100 rules / 100 deny entries; 1-min load after: {load}")
    print(f"{'hook':<26}{'median':>10}{'p90':>10}{'p99':>10}{'mean':>10}")
    for name, _ in commands:
        ns = sorted(times[name])
        cells = [percentile(ns, 50), percentile(ns, 90), percentile(ns, 99), sum(ns) / len(ns)]
        print(f"{name:<26}" + "".join(f"{c / 1e6:>8.2f}ms" for c in cells))


if __name__ == "__main__":
    main()
