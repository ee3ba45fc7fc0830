"""The code blocks of README.md and docs/**/*.md, and running a page's blocks as a reader
would: in order, in one fresh directory, against a scripted model server.

The convention, for whoever writes a page:

- A ```python block runs as a script; in a ```console block each line starting with
  ``$ `` runs in bash (a line ending in ``\\`` continues on the next), the other lines are
  shown output and are not checked. Every command must exit 0.
- ``<!-- not-run: <reason> -->`` on the line right above a fence leaves that block out
  (the reason must be said); ``<!-- exits: N -->`` above a console block makes its last
  command expected to exit N (the others still 0).
- A block whose fence carries ``title="path"`` (```python title="agent.py") is written to
  that path in the page's directory and not run: later blocks use it.
- Other fence languages (text, json, yaml, toml, mermaid, ...) are not run.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shlex
import stat
import subprocess
import sys
from pathlib import Path

__all__ = [
    "REPO",
    "Block",
    "PageEnv",
    "blocks",
    "console_commands",
    "marker_problems",
    "page_id",
    "pages",
    "run_block",
]

REPO = Path(__file__).resolve().parents[2]
RUN_LANGS = ("python", "console")
_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})\s*(?P<info>[^`]*)$")
_MARKER = re.compile(r"^\s*<!--\s*(?P<kind>not-run|exits)\b(?P<arg>.*?)-->\s*$")
_TITLE = re.compile(r"""\btitle=(?:"(?P<dq>[^"]*)"|'(?P<sq>[^']*)'|(?P<bare>\S+))""")
TIMEOUT = 240.0  # seconds a block (or a console command) may take


@dataclasses.dataclass(frozen=True)
class Block:
    """One fenced block of a page: where it starts, its language, its text, its markers."""

    page: str  # the page's path relative to the checkout
    line: int  # 1-based line of the opening fence
    lang: str
    text: str
    title: str | None = None  # a file to write the block to, not a block to run
    not_run: str | None = None  # the reason, where the block is marked not-run
    exits: int | None = None  # the last command's exit status, where marked
    marker: str | None = None  # the marker line above the fence, as written

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def runs(self) -> bool:
        return self.lang in RUN_LANGS and self.not_run is None and self.title is None


def pages() -> list[Path]:
    """README.md and every docs/**/*.md, README first."""
    return [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def page_id(page: Path, root: Path = REPO) -> str:
    return page.relative_to(root).as_posix()


def _title(info: str) -> str | None:
    found = _TITLE.search(info)
    return None if found is None else next(g for g in found.groups() if g is not None)


def _marked(block: Block, above: str) -> Block:
    marker = _MARKER.match(above)
    if marker is None:
        return block
    kind, arg = marker["kind"], marker["arg"].strip()
    arg = arg[1:].strip() if arg.startswith(":") else arg
    if kind == "not-run":
        return dataclasses.replace(block, not_run=arg, marker=above.strip())
    exits = int(arg) if arg.isdigit() else None
    return dataclasses.replace(block, exits=exits, marker=above.strip())


def blocks(page: Path, root: Path = REPO) -> list[Block]:
    """Every fenced block of ``page`` (a page of the checkout ``root``), in order (indented
    fences too, dedented)."""
    lines = page.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        indent, fence = opening["indent"], opening["fence"]
        end = next(
            (j for j in range(i + 1, len(lines)) if lines[j].strip().startswith(fence)),
            len(lines),
        )
        body = [ln[len(indent) :] if ln.startswith(indent) else ln for ln in lines[i + 1 : end]]
        info = opening["info"].strip()
        lang = info.split()[0].lstrip(".{").lower() if info else ""
        block = Block(page_id(page, root), i + 1, lang, "\n".join(body) + "\n", title=_title(info))
        found.append(_marked(block, lines[i - 1] if i else ""))
        i = end + 1
    return found


def marker_problems(page: Path, root: Path = REPO) -> list[str]:
    """What is wrong with the page's markers: a not-run without its reason, an exits
    without its status or above a block that is not a console block, a marker that is
    not right above a fence."""
    problems = []
    found = blocks(page, root)
    for block in found:
        if block.marker is None:
            continue
        if block.marker.startswith("<!-- not-run") and not block.not_run:
            problems.append(f"{block.where}: a not-run marker must say why: {block.marker}")
        if block.marker.startswith("<!-- exits"):
            if block.exits is None:
                problems.append(f"{block.where}: an exits marker needs a number: {block.marker}")
            elif block.lang != "console":
                problems.append(f"{block.where}: an exits marker belongs above a console block")
    fence_above = {b.line - 1 for b in found if b.marker is not None}
    for n, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        if _MARKER.match(line) and n not in fence_above:
            problems.append(f"{page_id(page, root)}:{n}: a marker must sit right above a fence")
    return problems


def console_commands(text: str) -> list[str]:
    """The commands of a console block: its ``$ `` lines, with their ``\\`` continuations."""
    commands: list[str] = []
    going = False
    for line in text.splitlines():
        if line.startswith("$ "):
            commands.append(line[2:])
        elif going:
            commands[-1] += "\n" + line
        else:
            continue
        going = line.endswith("\\")
    return commands


@dataclasses.dataclass(frozen=True)
class PageEnv:
    """A page's directory and the environment its blocks run in."""

    where: Path
    env: dict[str, str]

    @classmethod
    def make(cls, where: Path, base_url: str, root_url: str) -> PageEnv:
        """``where`` with a bin/ of ``cassette`` and ``python`` (this interpreter, this
        checkout), OPENAI_BASE_URL / ANTHROPIC_BASE_URL at the server and fake keys."""
        bin_dir = where.parent / f"{where.name}-bin"
        bin_dir.mkdir(exist_ok=True)
        exe = shlex.quote(sys.executable)
        for name, body in (("cassette", f"{exe} -m cassette"), ("python", exe)):
            shim = bin_dir / name
            shim.write_text(f'#!/bin/sh\nexec {body} "$@"\n')
            shim.chmod(shim.stat().st_mode | stat.S_IXUSR)
        # the reader's environment, not the test run's (an inner pytest is no xdist worker)
        drop = ("CASSETTE_", "OPENAI_", "ANTHROPIC_", "PYTHONPATH", "PYTEST_")
        env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
        env.update(
            PATH=os.pathsep.join([str(bin_dir), str(Path(sys.executable).parent), env["PATH"]]),
            PYTHONPATH=str(REPO),
            OPENAI_BASE_URL=base_url,
            OPENAI_API_KEY="sk-fake-docs-0123456789abcdef",
            ANTHROPIC_BASE_URL=root_url,
            ANTHROPIC_API_KEY="sk-ant-fake-docs-0123456789abcdef",
        )
        return cls(where, env)


def _run(argv: list[str], page: PageEnv) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, cwd=page.where, env=page.env, capture_output=True, text=True,
        timeout=TIMEOUT, check=False, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def _failed(block: Block, what: str, done: subprocess.CompletedProcess[str], want: int) -> str:
    return (
        f"{block.where}: {what} exited {done.returncode}, expected {want}\n"
        f"--- stdout\n{done.stdout[-6000:]}\n--- stderr\n{done.stderr[-6000:]}"
    )


def run_block(block: Block, n: int, page: PageEnv) -> None:
    """Write a titled block to its file, or run a python or console block (the n-th of its
    page); an assertion names the page and line where it fails."""
    if block.title is not None:
        target = page.where / block.title
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(block.text, encoding="utf-8")
        return
    if not block.runs:
        return
    if block.lang == "python":
        script = page.where / f"example_{n}.py"
        script.write_text(block.text, encoding="utf-8")
        done = _run([sys.executable, script.name], page)
        assert done.returncode == 0, _failed(block, "the script", done, 0)
        return
    commands = console_commands(block.text)
    assert commands, f"{block.where}: a console block with no `$ ` command"
    for k, command in enumerate(commands):
        want = block.exits if block.exits is not None and k == len(commands) - 1 else 0
        done = _run(["bash", "-c", command], page)
        assert done.returncode == want, _failed(block, f"`{command}`", done, want)
