"""The design's conformance cases, decided through `Policy.decide`.

The cases are copied from the shared design folder (shared/conformance/
cases.jsonl and turn3.jsonl, the contract `mcppol eval` is checked against by
.ci/run) into tests/fixtures/conformance/, so a fresh clone has them. Each
case's `eval` argv is translated into decide's keywords and the case's
expected fields are compared, as shared/conformance/run.py does for the CLI.
A flag the translation does not know fails the case: no case is skipped.

With MCPPOL_BIN naming an `mcppol` binary (.ci/run passes the release
build), every case is also run through `mcppol eval` and the whole decision
(decision, source, reason, rule_id, policy, line) must be the one Python got.
"""

import json
import os
import pathlib
import subprocess

import pytest

import mcppol

ROOT = pathlib.Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "fixtures" / "conformance"

# Flags that take a value, and the keyword each becomes; `--args` and the
# other JSON flags are parsed first.
TEXT_FLAGS = {
    "--tool": "tool",
    "--resource": "resource",
    "--prompt": "prompt",
    "--principal": "principal",
    "--cwd": "cwd",
}
JSON_FLAGS = {
    "--args": "args",
    "--annotations": "annotations",
    "--assigns": "assigns",
    "--tool-def": "tool_def",
    "--lock": "lock",
}
SWITCHES = {
    "--no-approver": ("approver", False),
    "--trust-server": ("trust_server", True),
    "--taint-unknown": ("taint_unknown", True),
    "--local-tool": ("local_tool", True),
}


def load_cases():
    cases = []
    for path in sorted(FIXTURES.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                cases.append(json.loads(line))
    return cases


CASES = load_cases()


def json_value(arg, files):
    """A JSON flag's value: inline JSON, or a case file as `$NAME`/`@$NAME`."""
    for prefix in ("@$", "$"):
        if arg.startswith(prefix) and arg[len(prefix):] in files:
            return files[arg[len(prefix):]]
    return json.loads(arg)


def translate(argv, files):
    """`mcppol eval` flags to (policy name, decide keywords)."""
    name = None
    kwargs = {}
    i = 0
    while i < len(argv):
        flag = argv[i]
        if flag in SWITCHES:
            key, value = SWITCHES[flag]
            kwargs[key] = value
            i += 1
            continue
        if i + 1 >= len(argv):
            raise AssertionError(f"flag {flag} has no value")
        value = argv[i + 1]
        if flag == "--name":
            name = value
        elif flag == "--taint":
            kwargs.setdefault("taint", []).append(value)
        elif flag in TEXT_FLAGS:
            kwargs[TEXT_FLAGS[flag]] = value
        elif flag in JSON_FLAGS:
            kwargs[JSON_FLAGS[flag]] = json_value(value, files)
        else:
            raise AssertionError(f"the Python API has no translation for {flag}")
        i += 2
    return name, kwargs


def test_the_cases_are_there():
    assert len(CASES) >= 59, f"only {len(CASES)} cases under {FIXTURES}"


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_case(case, tmp_path):
    policy_path = tmp_path / "policy.mcppol"
    policy_path.write_text(case["policy"], encoding="utf-8")
    name, kwargs = translate(case["argv"], case.get("files", {}))
    policy = mcppol.Policy.from_file(str(policy_path), name=name)
    got = policy.decide(**kwargs).to_dict()
    wrong = {k: (v, got.get(k, "<absent>")) for k, v in case["expect"].items() if got.get(k, "<absent>") != v}
    assert not wrong, f"{case['id']}: {wrong}"
    # The same text from a string decides the same (bar the file name).
    from_str = mcppol.Policy.from_str(case["policy"], name=name).decide(**kwargs).to_dict()
    assert from_str == got


CLI = os.environ.get("MCPPOL_BIN")


def cli_argv(argv, files, tmp_path):
    """The case's argv with `$NAME`/`@$NAME` as the paths of its files."""
    paths = {}
    for name, value in files.items():
        paths[name] = tmp_path / name
        paths[name].write_text(json.dumps(value), encoding="utf-8")
    out = []
    for arg in argv:
        for prefix in ("@$", "$"):
            if arg.startswith(prefix) and arg[len(prefix):] in paths:
                arg = prefix[:-1] + str(paths[arg[len(prefix):]])
                break
        out.append(arg)
    return out


@pytest.mark.skipif(not CLI, reason="MCPPOL_BIN is not set (.ci/run sets it to the release binary)")
@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_case_equals_the_cli(case, tmp_path):
    policy_path = tmp_path / "policy.mcppol"
    policy_path.write_text(case["policy"], encoding="utf-8")
    name, kwargs = translate(case["argv"], case.get("files", {}))
    ours = mcppol.Policy.from_file(str(policy_path), name=name).decide(**kwargs).to_dict()
    argv = cli_argv(case["argv"], case.get("files", {}), tmp_path)
    proc = subprocess.run(
        [CLI, "eval", "--policy", str(policy_path), *argv], capture_output=True, text=True, timeout=30
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == ours
