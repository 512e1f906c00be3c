"""Every code block of README.md, CONTRIBUTING.md and docs/*.md runs, so a snippet cannot rot.

Conventions (CONTRIBUTING.md states them for writers):

- A ```` ```python ```` block is executed. The blocks of one file run in order, in one
  namespace of their own, in an empty temporary working directory, with the global random
  generator at its initial state (one process runs every file: the import and LLVM start once).
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
from dataclasses import dataclass

import paths
import pytest

ROOT = paths.ROOT
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


def python_blocks(path):
    return [b for b in parse_blocks(read(path)) if b.lang == "python" and not is_no_run(b)]


def run_files(paths, tmp):
    """Execute the files' python blocks (tests/_doc_runner.py): per file, its seconds and, per
    block, its stdout and error."""
    payload = [{"path": p, "blocks": [{"name": f"{p}:{b.line}", "code": b.code}
                                      for b in python_blocks(p)]} for p in paths]
    out = os.path.join(tmp, "results.json")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (ROOT, env.get("PYTHONPATH")) if p)
    proc = subprocess.run([sys.executable, RUNNER, out, os.path.join(tmp, "work")],
                          input=json.dumps(payload), capture_output=True, text=True,
                          timeout=600, cwd=tmp, env=env)
    assert proc.returncode == 0, f"the docs runner failed:\n{proc.stderr}"
    with open(out) as f:
        return json.load(f)


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    """Every file's blocks, run once for the module in one fresh process."""
    return run_files(FILES, str(tmp_path_factory.mktemp("docs")))


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
def test_python_blocks_run_and_print_what_they_show(path, executed):
    blocks, report = python_blocks(path), executed[path]
    for block, result in zip(blocks, report["results"]):
        where = f"{path}:{block.line}"
        assert result["error"] is None, f"{where} raised:\n{result['error']}"
        if block.expected is not None:
            assert output_matches(block.expected, result["stdout"]), (
                f"{where} printed\n{result['stdout']}\nbut the text shows\n{block.expected}")
    assert len(report["results"]) == len(blocks)
    assert report["seconds"] < 30, (
        f"{path}'s blocks take {report['seconds']:.0f} s: use smaller shapes")


def test_a_file_starts_afresh(tmp_path):
    """Each file gets its own namespace, working directory and generator state."""
    first = "```python\nimport functorch_core as fc\nfc.manual_seed(5)\nseen = 1\n"
    first += "open('f.txt', 'w').close()\n```\n"
    second = ("```python\nimport os\nfrom functorch_core import random\n"
              "print('seen' in dir(), os.listdir('.'), random.next_key())\n```\n")
    for name, text in (("a.md", first), ("b.md", second)):
        (tmp_path / name).write_text(text)
    global ROOT
    saved, ROOT = ROOT, str(tmp_path)
    try:
        report = run_files(["a.md", "b.md"], str(tmp_path))
    finally:
        ROOT = saved
    assert report["b.md"]["results"][0] == {"stdout": "False [] [ 928981903 3453687069]\n",
                                            "error": None}


def test_readme_is_a_short_guide_linking_every_docs_page():
    text = read("README.md")
    assert len(text.splitlines()) <= MAX_README_LINES
    for page in glob.glob(os.path.join(ROOT, "docs", "*.md")):
        name = os.path.relpath(page, ROOT)
        assert f"]({name}" in text, f"README.md does not link {name}"


REPO_PATH = re.compile(
    r"`((?:benchmarks|examples|tests|docs|ir|backends|functorch_core)/[A-Za-z0-9_./*-]+)`")
LINK = re.compile(r"\]\(([^)#\s]*)(?:#([^)\s]*))?\)")


def anchors(text):
    """GitHub's anchors for a Markdown text's headings (outside code blocks)."""
    out, fenced = set(), False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
        elif not fenced and line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            out.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return out


def test_anchor_slugs_follow_github():
    assert anchors("# Random numbers\n## `jit`, caches & threads\n") == {
        "random-numbers", "jit-caches--threads"}


@pytest.mark.parametrize("path", FILES)
def test_paths_and_links_exist(path):
    text = read(path)
    base = os.path.dirname(os.path.join(ROOT, path))
    for ref in REPO_PATH.findall(text):
        assert glob.glob(os.path.join(ROOT, ref.rstrip("/"))), f"{path} names {ref}: not found"
    for ref, anchor in LINK.findall(text):
        if "://" in ref:
            continue
        target = os.path.normpath(os.path.join(base, ref)) if ref else os.path.join(ROOT, path)
        assert os.path.exists(target), f"{path} links {ref}: not found"
        if anchor:
            with open(target, encoding="utf-8") as f:
                assert anchor in anchors(f.read()), f"{path} links {ref}#{anchor}: no such heading"
