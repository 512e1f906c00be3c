"""Every code block of README.md, CONTRIBUTING.md and docs/*.md runs, so a snippet cannot rot.

Conventions (CONTRIBUTING.md states them for writers):

- A ```` ```python ```` block is executed. The blocks of one file run in order, in one
  namespace, in a fresh process whose working directory is an empty temporary folder.
- A block whose output is shown is followed by a line ``prints`` (or ``prints:``) and then
  a plain ```` ``` ```` or ```` ```text ```` block: the block's stdout must equal it, up to
  trailing spaces; a line that is exactly ``...`` in the expected text matches any number of
  lines (times, addresses).
- ```` ```python no-run: <reason> ```` is not executed. Only code that cannot run on a
  machine without a GPU may be marked so; the reason must say so, and the list stays short.
- A ```` ```sh ```` block is not executed; every ``make <target>`` in it must be a target
  of the Makefile.
- Any other block (a plain one that is not a ``prints`` output, another language) fails.

Besides the blocks: the README stays a short guide (at most 250 lines) and links every
docs/ page, and every relative link and every repository path written in backticks
(``benchmarks/nn.py``, ``tests/test_rule_coverage_*.py``) exists.
"""

import glob
import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUNNER = os.path.join(ROOT, "tests", "_doc_runner.py")
FILES = ["README.md", "CONTRIBUTING.md",
         *sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs", "*.md")))]
MAX_README_LINES = 250
MAX_NO_RUN = 3
FENCE = re.compile(r"^(\s*)```(.*)$")
PRINTS = re.compile(r"^\s*prints:?\s*$")


@dataclass
class Block:
    info: str          # what follows the opening fence: "python", "sh", "python no-run: ..."
    code: str
    line: int          # 1-based line of the opening fence
    expected: str | None = None   # the following ``prints`` block, for a python block

    @property
    def lang(self):
        return self.info.split(":")[0].split()[0] if self.info.strip() else ""


def read(path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        return f.read()


def parse_blocks(text):
    """The fenced blocks of a Markdown text, each ``prints`` output attached to its block."""
    lines = text.splitlines()
    raw, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, info, start = m.group(1), m.group(2).strip(), i
        body, i = [], i + 1
        while i < len(lines) and lines[i].strip() != "```":
            body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i])
            i += 1
        if i == len(lines):
            raise AssertionError(f"line {start + 1}: a code block is never closed")
        raw.append((start, i, info, "\n".join(body) + "\n"))
        i += 1
    blocks, outputs = [], set()
    for k, (start, end, info, code) in enumerate(raw):
        if k in outputs:
            continue
        block = Block(info, code, start + 1)
        if block.lang == "python" and k + 1 < len(raw):
            between = [s for s in lines[end + 1:raw[k + 1][0]] if s.strip()]
            if len(between) == 1 and PRINTS.match(between[0]):
                nxt = raw[k + 1]
                assert nxt[2] in ("", "text"), (
                    f"line {nxt[0] + 1}: the output after `prints` must be a plain or text "
                    f"block, not {nxt[2]!r}")
                block.expected = nxt[3]
                outputs.add(k + 1)
        blocks.append(block)
    return blocks


def output_matches(expected, actual):
    """Whether ``actual`` is ``expected`` up to trailing spaces, ``...`` lines matching any."""
    exp = [s.rstrip() for s in expected.rstrip().splitlines()]
    act = [s.rstrip() for s in actual.rstrip().splitlines()]

    def match(i, j):
        if i == len(exp):
            return j == len(act)
        if exp[i] == "...":
            return any(match(i + 1, k) for k in range(j, len(act) + 1))
        return j < len(act) and exp[i] == act[j] and match(i + 1, j + 1)

    return match(0, 0)


def is_no_run(block):
    return block.lang == "python" and block.info.split(":")[0].split()[1:] == ["no-run"]


def makefile_targets():
    return set(re.findall(r"^([A-Za-z0-9_.-]+)\s*:(?!=)", read("Makefile"), re.M))


def run_file(path, blocks, tmp_path):
    """Execute a file's python blocks in one fresh process; per block its stdout and error."""
    payload = [{"name": f"{path}:{b.line}", "code": b.code} for b in blocks]
    out = tmp_path / "results.json"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (ROOT, env.get("PYTHONPATH")) if p)
    proc = subprocess.run([sys.executable, RUNNER, str(out)], input=json.dumps(payload),
                          capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env)
    assert proc.returncode == 0, f"{path}: the runner failed:\n{proc.stderr}"
    return json.loads(out.read_text())


# --- the conventions' own checks: the parser and the matcher must be able to fail -----------

def test_parser_attaches_prints_output_and_dedents_list_blocks():
    text = ("x\n```python\nprint(1)\n```\n\nprints\n\n```\n1\n```\n"
            "- item\n\n  ```sh\n  make demo\n  ```\n")
    blocks = parse_blocks(text)
    assert [(b.lang, b.line) for b in blocks] == [("python", 2), ("sh", 13)]
    assert blocks[0].expected == "1\n" and blocks[1].code == "make demo\n"


def test_parser_leaves_an_unannounced_plain_block_alone_for_the_check_to_refuse():
    blocks = parse_blocks("```python\npass\n```\n\n```\nnot output\n```\n")
    assert blocks[0].expected is None and blocks[1].lang == ""


def test_output_matching_and_its_ellipsis():
    assert output_matches("a\n...\nd\n", "a\nb\nc\nd\n")
    assert output_matches("a  \n", "a\n\n")
    assert not output_matches("a\nd\n", "a\nb\nd\n")
    assert not output_matches("a\n...\nd\n", "a\nb\n")


# --- the documents ----------------------------------------------------------------------

@pytest.mark.parametrize("path", FILES)
def test_every_block_is_of_a_known_kind(path):
    targets = makefile_targets()
    for b in parse_blocks(read(path)):
        where = f"{path}:{b.line}"
        assert b.lang in ("python", "sh"), (
            f"{where}: a ```{b.info} block is neither python, sh, nor the output after `prints`")
        if b.lang == "sh":
            for target in re.findall(r"\bmake\s+([A-Za-z0-9_.-]+)", b.code):
                assert target in targets, f"{where}: `make {target}` is not a Makefile target"
        if is_no_run(b):
            reason = b.info.partition(":")[2].strip()
            assert "GPU" in reason, (
                f"{where}: no-run is only for code that needs a GPU; the reason must say so "
                f"(```python no-run: needs a GPU ...), got {reason!r}")


def test_no_run_blocks_are_few():
    skipped = [f"{p}:{b.line}" for p in FILES for b in parse_blocks(read(p)) if is_no_run(b)]
    assert len(skipped) <= MAX_NO_RUN, f"too many blocks that do not run: {skipped}"


@pytest.mark.parametrize("path", FILES)
def test_python_blocks_run_and_print_what_they_show(path, tmp_path):
    blocks = [b for b in parse_blocks(read(path)) if b.lang == "python" and not is_no_run(b)]
    if not blocks:
        pytest.skip(f"{path} has no python block")
    started = time.perf_counter()
    results = run_file(path, blocks, tmp_path)
    for block, result in zip(blocks, results):
        where = f"{path}:{block.line}"
        assert result["error"] is None, f"{where} raised:\n{result['error']}"
        if block.expected is not None:
            assert output_matches(block.expected, result["stdout"]), (
                f"{where} printed\n{result['stdout']}\nbut the text shows\n{block.expected}")
    assert len(results) == len(blocks)
    assert time.perf_counter() - started < 60, f"{path}'s blocks are too slow for the docs test"


def test_readme_is_a_short_guide_linking_every_docs_page():
    text = read("README.md")
    assert len(text.splitlines()) <= MAX_README_LINES
    for page in glob.glob(os.path.join(ROOT, "docs", "*.md")):
        name = os.path.relpath(page, ROOT)
        assert f"]({name}" in text, f"README.md does not link {name}"


REPO_PATH = re.compile(
    r"`((?:benchmarks|examples|tests|docs|ir|backends|functorch_core)/[A-Za-z0-9_./*-]+)`")
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


@pytest.mark.parametrize("path", FILES)
def test_paths_and_links_exist(path):
    text = read(path)
    base = os.path.dirname(os.path.join(ROOT, path))
    for ref in REPO_PATH.findall(text):
        assert glob.glob(os.path.join(ROOT, ref.rstrip("/"))), f"{path} names {ref}: not found"
    for ref in LINK.findall(text):
        if "://" in ref:
            continue
        assert os.path.exists(os.path.join(base, ref)), f"{path} links {ref}: not found"
