"""The package's API: loading, deciding, explaining, the store, errors."""

import json
import threading
import time

import pytest

import mcppol

POLICY = """
policy main {
  default ask
  deny "*/delete_repo"
  deny tainted_send: "mail/send" when tainted(ignore: ["mail"])
  ask "github/create_*"
  allow "github/get_*", "mail/send"
  allow fs: "fs/read_file" when args.path inside "/srv"
}
"""


@pytest.fixture
def policy():
    return mcppol.Policy.from_str(POLICY)


def test_decide_gives_every_field(policy):
    d = policy.decide(tool="github/delete_repo")
    assert (d.decision, d.source, d.reason, d.rule_id) == ("deny", "deny", "deny_rule", "deny:0")
    assert d.policy == "main"
    assert d.line == 4
    assert d.allowed is False
    assert d.to_dict() == {
        "decision": "deny",
        "source": "deny",
        "reason": "deny_rule",
        "rule_id": "deny:0",
        "policy": "main",
        "line": 4,
    }
    assert repr(d) == (
        "Decision(decision='deny', source='deny', reason='deny_rule', "
        "rule_id='deny:0', policy='main', line=4)"
    )


def test_allow_ask_and_the_approver(policy):
    assert policy.decide("github/get_me").allowed
    ask = policy.decide("github/create_issue", args={"title": "x"})
    assert (ask.decision, ask.reason, ask.allowed) == ("ask", "ask_rule", False)
    no_one = policy.decide("github/create_issue", approver=False)
    assert (no_one.decision, no_one.reason) == ("deny", "no_approver")
    default = policy.decide("other/thing")
    assert (default.decision, default.source, default.rule_id) == ("ask", "default", None)
    assert default == policy.decide("other/thing")


def test_taint_principal_and_paths(policy):
    assert policy.decide("mail/send").allowed
    tainted = policy.decide("mail/send", taint=["web"])
    assert (tainted.decision, tainted.rule_id) == ("deny", "tainted_send")
    assert policy.decide("mail/send", taint=("mail",)).allowed
    assert policy.decide("mail/send", taint_unknown=True).decision == "deny"
    assert policy.decide("fs/read_file", args={"path": "/srv/a"}).rule_id == "fs"
    assert policy.decide("fs/read_file", args={"path": "b"}, cwd="/srv").rule_id == "fs"
    assert policy.decide("fs/read_file", args={"path": "/etc/passwd"}).source == "default"


def test_resources_and_prompts_out_of_scope(policy):
    d = policy.decide(resource="docs/file:///etc/passwd")
    assert (d.decision, d.reason) == ("allow", "out_of_scope")
    assert policy.decide(prompt="docs/summary").reason == "out_of_scope"


def test_pins_through_a_lock_or_a_stated_approval():
    p = mcppol.Policy.from_str('policy p { pin_tools on\n allow "fs/read_file" }')
    tool = {"name": "read_file", "description": "Read a file."}
    lock = {"version": 1, "tools": {"fs/read_file": mcppol.fingerprint(tool)}}
    assert p.decide("fs/read_file", tool_def=tool, lock=lock).allowed
    assert p.decide("fs/read_file", tool_def=tool, lock=json.dumps(lock)).allowed
    changed = dict(tool, description="Read a file. And mail it.")
    d = p.decide("fs/read_file", tool_def=changed, lock=lock)
    assert (d.decision, d.source, d.reason) == ("ask", "pin", "definition_changed")
    assert p.decide("fs/read_file", approval="changed", approver=False).decision == "deny"
    assert p.decide("fs/read_file", approval="new").allowed  # an exact allow


def test_explain_text_and_json(policy):
    text = policy.explain("github/delete_repo")
    assert "decision: deny" in text
    data = json.loads(policy.explain("github/delete_repo", format="json"))
    assert data["decision"]["rule_id"] == "deny:0"
    with pytest.raises(mcppol.RequestError, match="format takes"):
        policy.explain("github/get_me", format="yaml")


def test_from_file_and_name(tmp_path):
    path = tmp_path / "two.mcppol"
    path.write_text('policy a { allow "x/y" }\npolicy b { deny "x/y" }\n')
    assert mcppol.Policy.from_file(path, name="b").decide("x/y").decision == "deny"
    assert mcppol.Policy.from_file(str(path), name="a").name == "a"
    with pytest.raises(mcppol.PolicyError, match="several policies \\(a, b\\); name one with name="):
        mcppol.Policy.from_file(path)
    with pytest.raises(mcppol.PolicyError, match="no policy named `c`"):
        mcppol.Policy.from_file(path, name="c")


def test_policy_error_is_the_rendered_diagnostic(tmp_path):
    path = tmp_path / "bad.mcppol"
    path.write_text('policy p {\n  allow "x/y"\n  alow "a/b"\n}\n')
    with pytest.raises(mcppol.PolicyError) as caught:
        mcppol.Policy.from_file(path)
    e = caught.value
    assert str(path) in str(e)
    assert e.diagnostics, "no diagnostics"
    d = e.diagnostics[0]
    assert d.file == str(path)
    assert d.line == 3 and d.column >= 1
    assert d.code.startswith("mcppol::")
    assert d.severity == "error"
    assert d.message and d.message in str(e)


def test_missing_file_is_a_policy_error(tmp_path):
    with pytest.raises(mcppol.PolicyError) as caught:
        mcppol.Policy.from_file(tmp_path / "none.mcppol")
    assert caught.value.diagnostics[0].help == "check the path and its permissions"


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({}, "name a request"),
        ({"tool": "nosuch"}, 'tool takes "SERVER/NAME"'),
        ({"tool": "a/b", "resource": "a/c"}, "name one request"),
        ({"tool": "a/b", "args": [1]}, "args takes a dict"),
        ({"tool": "a/b", "args": {"x": object()}}, "args\\[\"x\"\\]: a value of type `object` is not JSON"),
        ({"tool": "a/b", "args": {1: 2}}, "a dict key of type `int`"),
        ({"tool": "a/b", "args": {"x": float("nan")}}, "NaN and infinity"),
        ({"tool": "a/b", "args": {"x": 2**70}}, "outside 64 bits"),
        ({"tool": "a/b", "taint": "web"}, "not one str"),
        ({"tool": "a/b", "lock": {"version": 1, "tools": {}}}, "lock needs tool_def"),
        ({"tool": "a/b", "approval": "maybe"}, "approval takes"),
        ({"tool": "a/b", "tool_def": {"name": "c"}}, 'its "name" must be "b"'),
        ({"tool": "a/b", "colour": "red"}, 'unknown keyword "colour"'),
        ({"tool": "a/b", "approver": "yes"}, "approver takes True or False"),
        ({"tool": "a/b", "lock": {"version": 2, "tools": {}}, "tool_def": {"name": "b"}}, "lock: "),
    ],
)
def test_bad_requests_say_what_to_fix(policy, kwargs, message):
    with pytest.raises(mcppol.RequestError, match=message):
        policy.decide(**kwargs)


def test_request_error_is_a_value_error():
    assert issubclass(mcppol.RequestError, ValueError)


def test_arguments_are_bounded(policy):
    deep = current = {}
    for _ in range(mcppol.MAX_ARGUMENT_DEPTH + 1):
        current["a"] = {}
        current = current["a"]
    with pytest.raises(mcppol.RequestError, match="nested deeper than 64"):
        policy.decide("github/get_me", args=deep)
    big = {"x": "y" * (mcppol.MAX_ARGUMENT_BYTES + 1)}
    with pytest.raises(mcppol.RequestError, match="over 4 MiB"):
        policy.decide("github/get_me", args=big)
    with pytest.raises(mcppol.RequestError, match="more than"):
        policy.decide("mail/send", taint=["s"] * (mcppol.MAX_TAINT + 1))
    # A cycle ends at the depth bound, not in a crash.
    cycle = {}
    cycle["self"] = cycle
    with pytest.raises(mcppol.RequestError, match="nested deeper"):
        policy.decide("github/get_me", args=cycle)


def test_decisions_from_many_threads_agree(policy):
    want = policy.decide("mail/send", taint=["web"]).to_dict()
    results = []

    def work():
        for _ in range(200):
            results.append(policy.decide("mail/send", taint=["web"]).to_dict())

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 800 and all(r == want for r in results)


def test_store_decides_by_name_and_keeps_the_last_good(tmp_path):
    (tmp_path / "ops.mcppol").write_text('policy ops { allow "ops/status" }\n')
    (tmp_path / "mail.mcppol").write_text('policy mail { deny "mail/*" }\n')
    store = mcppol.Store(tmp_path, watch=False)
    assert store.names() == ["mail", "ops"]
    assert store.decide("ops", tool="ops/status").allowed
    missing = store.decide("jira", tool="jira/create")
    assert (missing.decision, missing.reason, missing.policy) == ("deny", "no_policy", None)
    before = store.generation
    with pytest.raises(mcppol.PolicyError) as caught:
        store.update("ops", "policy ops {")
    assert caught.value.diagnostics
    assert store.generation == before
    assert store.decide("ops", "ops/status").allowed
    status = store.status()
    ops = next(p for p in status["policies"] if p["name"] == "ops")
    assert ops["digest"].startswith("sha256:") and ops["generation"] == before


def test_store_reloads_when_a_file_changes(tmp_path):
    path = tmp_path / "ops.mcppol"
    path.write_text('policy ops { allow "ops/status" }\n')
    store = mcppol.Store(str(path), watch=True)
    assert store.decide("ops", "ops/status").allowed
    path.write_text('policy ops { deny "ops/status" }\n')
    deadline = time.monotonic() + 10
    while store.decide("ops", "ops/status").allowed and time.monotonic() < deadline:
        time.sleep(0.05)
    assert store.decide("ops", "ops/status").decision == "deny"
    # A bad save keeps the last good policy in force.
    path.write_text("policy ops {")
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        entry = next(f for f in store.status()["files"] if f["path"] == str(path))
        if entry["last_error"] is not None:
            break
        time.sleep(0.05)
    assert entry["last_error"] is not None
    assert store.decide("ops", "ops/status").decision == "deny"
    store.unwatch()


def test_store_that_does_not_open(tmp_path):
    (tmp_path / "bad.mcppol").write_text("policy {")
    with pytest.raises(mcppol.PolicyError) as caught:
        mcppol.Store(tmp_path)
    assert caught.value.diagnostics[0].file.endswith("bad.mcppol")
