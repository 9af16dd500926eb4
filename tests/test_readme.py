"""The README and every page of docs/ work as written (issue 52).

Every fenced block has a language, and what it holds is checked by it: a ``bash`` / ``sh`` block runs line by line as
a user pastes it (in a fresh working directory after ``spanfold demo``, the ``spanfold`` console script on PATH) and
each line exits 0 without a traceback; a ``python`` block runs as a script in a fresh directory; ``json`` and
``yaml`` blocks parse; ``text`` is shown (output, diagrams). A block that cannot run here says so in an HTML comment on
the line before it, which a reader of the rendered page does not see:

* ``<!-- doc-test: skip (why) -->``: not run (it installs packages, starts a server, needs the user's own files, or
  is an excerpt of the source);
* ``<!-- doc-test: pytest -->``: a test file, run under pytest.

Every relative link of the pages resolves (the file, and the heading an anchor names), and every page of docs/ is
reached from the README. The README's install and test lines are the ones ``.ci/run`` runs."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
#: What a block's language says about it.
SHELL = ("bash", "sh")
SHOWN = ("text", "json", "yaml", "python", *SHELL)
MARK = re.compile(r"^<!-- doc-test: (?P<kind>skip|pytest)(?: \((?P<why>[^)]+)\))? -->$")
#: What the old README said in its blocks, where a reader saw it.
VISIBLE_MARKER = re.compile(r"skipped by tests/|test_readme", re.I)


@dataclass(frozen=True, slots=True)
class Block:
    page: Path
    line: int  # of the opening fence, from 1
    lang: str
    body: str
    mark: str | None  # "skip", "pytest" or None (checked by its language)

    def __str__(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def _blocks(page: Path) -> list[Block]:
    lines = page.read_text(encoding="utf-8").split("\n")
    out: list[Block] = []
    n = 0
    while n < len(lines):
        line = lines[n]
        if line.startswith("```"):
            lang = line[3:].strip()
            end = next(i for i in range(n + 1, len(lines)) if lines[i].startswith("```"))
            mark = MARK.match(lines[n - 1]) if n else None
            out.append(Block(page, n + 1, lang, "\n".join(lines[n + 1 : end]) + "\n", mark["kind"] if mark else None))
            n = end + 1
            continue
        n += 1
    return out


def _all_blocks() -> list[Block]:
    return [block for page in PAGES for block in _blocks(page)]


def _page_id(page: Path) -> str:
    return str(page.relative_to(ROOT))


def _shell_lines(page: Path) -> list[str]:
    """The lines of a page's shell blocks that run (continuation lines joined)."""
    out: list[str] = []
    for block in _blocks(page):
        if block.lang in SHELL and block.mark is None:
            out.extend(line for line in block.body.replace("\\\n", " ").splitlines() if line.strip())
    return out


def _python(page: Path) -> list[Block]:
    return [b for b in _blocks(page) if b.lang == "python" and b.mark is None]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPANFOLD_", "OTEL_")) and k != "COLUMNS"}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def test_every_block_is_run_or_marked() -> None:
    blocks = _all_blocks()
    assert len(blocks) >= 25
    unlabelled = [str(b) for b in blocks if b.lang not in SHOWN]
    assert not unlabelled, f"label these blocks with one of {SHOWN}: {unlabelled}"
    for page in PAGES:
        lines = page.read_text(encoding="utf-8").split("\n")
        for n, line in enumerate(lines):
            if line.startswith("<!-- doc-test"):
                assert MARK.match(line), f"{_page_id(page)}:{n + 1}: not a marker: {line}"
                assert n + 1 < len(lines) and lines[n + 1].startswith("```"), f"{_page_id(page)}:{n + 1}: no block"
                kind = MARK.match(line)
                assert kind is not None and (kind["kind"] == "pytest" or kind["why"]), f"{line}: say why"
        visible = [n + 1 for n, line in enumerate(lines) if VISIBLE_MARKER.search(line) and not line.startswith("<!--")]
        assert not visible or page.name == "reliability.md", f"{_page_id(page)}: test notes a reader sees: {visible}"
    assert all(b.lang == "python" for b in blocks if b.mark == "pytest")
    skipped = [b for b in blocks if b.mark == "skip"]
    assert any("pip install" in b.body for b in skipped) and any("spanfold serve" in b.body for b in skipped)
    assert sum(len(_shell_lines(page)) for page in PAGES) >= 10


@pytest.mark.parametrize("page", [p for p in PAGES if _shell_lines(p)], ids=_page_id)
def test_every_shell_line_works_after_the_demo(page: Path, tmp_path: Path) -> None:
    env = _env()
    demo = subprocess.run(
        ["spanfold", "demo"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert demo.returncode == 0, demo.stderr
    assert "written to traces/traces.jsonl" in demo.stdout
    lines = _shell_lines(page)
    assert not [line for line in lines if re.search(r"\[--[a-z-]+\]", line)]  # no optional-flag brackets
    for line in lines:
        done = subprocess.run(
            ["bash", "-c", line], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60, check=False
        )
        assert done.returncode == 0, f"{line}\n{done.stdout[-1500:]}\n{done.stderr[-1500:]}"
        assert "Traceback" not in done.stderr, line
    leftovers = sorted(p.name for p in tmp_path.iterdir())
    assert set(leftovers) <= {"out", "traces"}, leftovers  # traces under traces/, what the pages derive under out/
    assert sorted(p.name for p in (tmp_path / "traces").iterdir()) == ["traces.jsonl", "traces.meta.jsonl"]


def test_the_checks_page_records_a_golden_run_and_checks_it(tmp_path: Path) -> None:
    """What the checks page's lines make: the golden spec and the JUnit report (run as in the test above)."""
    env = _env()
    subprocess.run(["spanfold", "demo"], cwd=tmp_path, env=env, capture_output=True, timeout=120, check=True)
    for line in _shell_lines(ROOT / "docs" / "checks.md"):
        subprocess.run(["bash", "-c", line], cwd=tmp_path, env=env, capture_output=True, timeout=60, check=True)
    assert (tmp_path / "out" / "golden.yaml").is_file() and (tmp_path / "out" / "report.xml").is_file()


@pytest.mark.parametrize("block", [b for p in PAGES for b in _python(p)], ids=lambda b: str(b).replace(os.sep, "/"))
def test_every_python_block_runs(block: Block, tmp_path: Path) -> None:
    (tmp_path / "block.py").write_text(block.body, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "block.py"], cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=120, check=False
    )
    said = f"{block}\n{done.stdout[-2000:]}{done.stderr[-2000:]}"
    assert done.returncode == 0 and "Traceback" not in done.stderr, said


def test_every_data_block_parses() -> None:
    for block in _all_blocks():
        if block.lang == "json":
            json.loads(block.body)
        elif block.lang == "yaml":
            assert yaml.safe_load(block.body) is not None, block


@pytest.mark.parametrize("block", [b for b in _all_blocks() if b.mark == "pytest"], ids=str)
def test_every_pytest_block_passes(block: Block, tmp_path: Path) -> None:
    first = block.body.splitlines()[0]
    named = re.match(r"# (test_\w+\.py): pip install 'spanfold\[([\w,-]+)\]'", first)
    assert named is not None, f"{block}: its first line names its file and what to install"
    from importlib.metadata import metadata, requires

    from packaging.requirements import Requirement

    wanted = named.group(2).split(",")
    assert set(wanted) <= set(metadata("spanfold").get_all("Provides-Extra") or []), wanted
    brought = {  # what those extras install: pytest, and the SDK the snippet imports
        Requirement(r).name for r in requires("spanfold") or [] for e in wanted if f'extra == "{e}"' in r
    }
    assert {"pytest", "openai"} <= brought, brought
    (tmp_path / named.group(1)).write_text(block.body, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", named.group(1)],
        cwd=tmp_path,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "1 passed" in done.stdout


# -- links -----------------------------------------------------------------------------------------------------------
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
FENCED = re.compile(r"^```.*?^```$", re.S | re.M)


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    out: set[str] = set()
    for line in FENCED.sub("", page.read_text(encoding="utf-8")).splitlines():
        if line.startswith("#"):
            slug = _slug(line.lstrip("#"))
            out.add(slug if slug not in seen else f"{slug}-{seen[slug]}")
            seen[slug] = seen.get(slug, 0) + 1
    return out


def _links(page: Path) -> list[str]:
    text = FENCED.sub("", page.read_text(encoding="utf-8"))
    return [t for t in LINK.findall(text) if not re.match(r"[a-z]+:", t)]


@pytest.mark.parametrize("page", PAGES, ids=_page_id)
def test_every_link_resolves(page: Path) -> None:
    broken = []
    for target in _links(page):
        path, _, anchor = target.partition("#")
        goal = (page.parent / path).resolve() if path else page
        if not goal.exists():
            broken.append(f"{target}: no such file")
        elif anchor and goal.suffix == ".md" and anchor not in _anchors(goal):
            broken.append(f"{target}: no heading '{anchor}' in {goal.name}")
    assert not broken, f"{_page_id(page)}: {broken}"


def test_every_page_is_reached_from_the_readme() -> None:
    reached = {README}
    todo = [README]
    while todo:
        page = todo.pop()
        for target in _links(page):
            path = target.partition("#")[0]
            goal = (page.parent / path).resolve() if path else page
            if goal.suffix == ".md" and goal.is_file() and goal not in reached and goal.parent.name == "docs":
                reached.add(goal)
                todo.append(goal)
    assert sorted(p.name for p in set(PAGES) - reached) == []
    direct = {(README.parent / t.partition("#")[0]).resolve() for t in _links(README)}
    assert len(direct & set(PAGES)) >= len(PAGES) - 2  # the README's own list names nearly every page


def test_the_readme_runs_the_tests_as_ci_does() -> None:
    """``.ci/run`` runs "the README's test command": the same install line (but for pip's -q) and test command."""
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    (install,) = [line.split("#")[0].strip() for line in ci if "pip install" in line and "constraints/test.txt" in line]
    marked = ci.index(next(line for line in ci if "The README's test command" in line))
    test = ci[marked + 1].split("||")[0].strip()  # (what follows "||" records its status)
    assert test.startswith("python -m pytest")
    readme = README.read_text(encoding="utf-8")
    assert f"{install.replace(' -q', '')} && {test}\n" in readme, (install, test)
