"""docs/python.md's examples: every ```python block, run in order in one
namespace from the root of the checkout, so the page cannot drift."""

import contextlib
import io
import os
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[3]
PAGE = ROOT / "docs" / "python.md"


def blocks():
    out = []
    lines = PAGE.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        if lines[i].rstrip() == "```python":
            start = i + 1
            end = start
            while lines[end].rstrip() != "```":
                end += 1
            out.append((start + 1, "\n".join(lines[start:end])))
            i = end
        i += 1
    return out


def test_every_example_runs():
    examples = blocks()
    assert len(examples) >= 6, "docs/python.md lost its examples"
    namespace = {}
    here = os.getcwd()
    os.chdir(ROOT)
    try:
        for line, code in examples:
            printed = io.StringIO()
            with contextlib.redirect_stdout(printed):
                exec(compile(code, f"docs/python.md:{line}", "exec"), namespace)
            # The `# ...` lines that end a block are what it prints.
            shown = []
            for text in reversed(code.splitlines()):
                if not text.startswith("# "):
                    break
                shown.insert(0, text[2:])
            got = printed.getvalue().splitlines()
            assert got[len(got) - len(shown):] == shown, f"docs/python.md:{line}: printed {got!r}"
    finally:
        os.chdir(here)
