"""Side virtual environments for tests of packages that cannot share the main one
(eval-protocol pins mcp<2 and openai 2.x; the mcp 1.x checks need mcp<2).

A side venv is built on first use from the package registry into a cache directory outside
the checkout (``$CASSETTE_TEST_VENVS``, else ``$XDG_CACHE_HOME/rollout-cassette/venvs``,
else ``~/.cache/rollout-cassette/venvs``) and reused across runs and checkouts while its
marker file (the recipe, the Python, this project's dependencies) matches.

A recipe names this project as ``"{repo}"`` (``"-e", "{repo}"`` or ``"{repo}[extra]"``
alike). The shared venv gets the project's dependencies, never the project: each checkout
gets its own tiny overlay venv (no packages; a ``.pth`` that adds the shared venv's
site-packages, another that puts the checkout on ``sys.path``, and the project's metadata
with its entry points), so the interpreter returned imports the checkout under test, and
so does any child it starts, whatever environment it passes. A build that fails returns the
reason, so the test fails saying why.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
QUIET = ("-q", "--disable-pip-version-check")
# the mcp 1.x tests (the main environment has mcp 2.x)
MCP1_RECIPE = (("mcp>=1.26,<2", "pytest>=8", "hypothesis>=6.100", "-e", "{repo}"),)
CACHE_VARIABLE = "CASSETTE_TEST_VENVS"
UNUSED_DAYS = 30  # a shared venv no run has used for this long is removed
_STEER = ("PYTEST_", "CASSETTE_")  # prefixes of variables that steer a child's tests
_SELF = re.compile(r"^\{repo\}(?:\[([\w.,-]+)\])?$")


def cache_dir() -> Path:
    """Where side venvs live: ``$CASSETTE_TEST_VENVS`` or the user's cache directory."""
    if os.environ.get(CACHE_VARIABLE):
        return Path(os.environ[CACHE_VARIABLE]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "rollout-cassette" / "venvs"


def python_of(venv: Path) -> Path:
    return venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def _site_packages(venv: Path) -> Path:
    if os.name == "nt":
        return venv / "Lib" / "site-packages"
    return venv / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"


def _project() -> dict[str, Any]:
    import tomllib  # 3.11+; on 3.10 _resolve() installs the checkout instead

    project: dict[str, Any] = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    return project


def _resolve(recipe: Sequence[Sequence[str]]) -> tuple[list[list[str]], bool]:
    """The pip arguments of each step with ``{repo}`` replaced by this project's
    dependencies, and whether the result still names this checkout (then the venv is
    built for it alone)."""
    try:
        project = _project()
    except ImportError:
        project = {}
    steps: list[list[str]] = []
    tied = False
    for step in recipe:
        args: list[str] = []
        for i, arg in enumerate(step):
            if arg == "-e" and i + 1 < len(step) and _SELF.match(step[i + 1]) and project:
                continue
            found = _SELF.match(arg)
            if found and project and "--no-deps" in step:
                continue  # the project alone: the overlay brings it
            if found and project:
                args += project.get("dependencies", [])
                for extra in filter(None, (found.group(1) or "").split(",")):
                    args += project.get("optional-dependencies", {})[extra]
            elif "{repo}" in arg:
                args.append(arg.replace("{repo}", str(REPO)))
                tied = True
            else:
                args.append(arg)
        steps.append(args)
    return steps, tied


def _marker(recipe: Sequence[Sequence[str]]) -> dict[str, Any]:
    steps, tied = _resolve(recipe)
    marker: dict[str, Any] = {"steps": steps, "python": sys.version}
    if tied:
        marker["repo"] = str(REPO)
    return marker


def venv_path(name: str, recipe: Sequence[Sequence[str]] = ()) -> Path:
    """The shared venv of ``name`` built from ``recipe`` (its own directory per recipe)."""
    key = json.dumps(_marker(recipe), sort_keys=True).encode()
    return cache_dir() / f"{name}-{hashlib.sha256(key).hexdigest()[:12]}"


@contextlib.contextmanager
def _lock(venv: Path) -> Iterator[None]:
    """One builder at a time (parallel pytest workers and checkouts share the venv)."""
    name = hashlib.sha256(str(venv).encode()).hexdigest()[:16]
    path = Path(tempfile.gettempdir()) / f"rollout-cassette-venv-{name}.lock"
    with path.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def run(argv: Sequence[str], timeout: float) -> None:
    try:
        proc = subprocess.run(
            list(argv), capture_output=True, text=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"`{' '.join(argv)}` took longer than {timeout:.0f} s") from None
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
        raise RuntimeError(f"`{' '.join(argv)}` exited with {proc.returncode}:\n{tail}")


def _build(venv: Path, recipe: Sequence[Sequence[str]]) -> None:
    """``venv`` afresh: ``pip install`` of each resolved step in turn, then the marker."""
    python = python_of(venv)
    shutil.rmtree(venv, ignore_errors=True)
    run([sys.executable, "-m", "venv", "--without-pip", str(venv)], 120)
    # a current pip resolves ~3x faster than an old bundled one
    run([sys.executable, "-m", "pip", "--python", str(python), "install", *QUIET,
         "pip>=25"], 180)  # fmt: skip
    for args in filter(None, _resolve(recipe)[0]):
        run([str(python), "-m", "pip", "install", *QUIET, "--no-compile", *args], 600)
    (venv / "rollout-cassette-venv.json").write_text(json.dumps(_marker(recipe), indent=2))


def _shared(name: str, recipe: Sequence[Sequence[str]]) -> Path:
    """The shared venv's directory, built if its marker does not match; used now."""
    venv = venv_path(name, recipe)
    marker = venv / "rollout-cassette-venv.json"
    with _lock(venv):
        try:
            fresh = json.loads(marker.read_text()) == _marker(recipe)
        except (FileNotFoundError, ValueError):
            fresh = False
        if not (fresh and python_of(venv).exists()):
            _build(venv, recipe)
        os.utime(marker)  # the last use, for _prune
    return venv


def _overlay(name: str, shared: Path) -> Path:
    """This checkout's interpreter over ``shared``: the shared venv's packages plus the
    checkout, installed as an editable install would be (metadata and entry points)."""
    tag = hashlib.sha256(f"{REPO}\0{shared}".encode()).hexdigest()[:12]
    venv = cache_dir() / "checkouts" / f"{name}-{tag}"
    project = _project()
    version = project["version"]
    dist = f"{project['name'].replace('-', '_')}-{version}.dist-info"
    files = {
        "_side_venv_base.pth": f"import site; site.addsitedir({str(_site_packages(shared))!r})\n",
        f"_{project['name'].replace('-', '_')}.pth": f"{REPO}\n",
        f"{dist}/METADATA": (
            f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {version}\n"
        ),
        f"{dist}/INSTALLER": "rollout-cassette tests\n",
        f"{dist}/RECORD": "",
        f"{dist}/entry_points.txt": _entry_points(project),
    }
    with _lock(venv):
        if not python_of(venv).exists():
            shutil.rmtree(venv, ignore_errors=True)
            run([sys.executable, "-m", "venv", "--without-pip", str(venv)], 120)
        site = _site_packages(venv)
        for old in site.glob("*.dist-info"):
            if old.name != dist:
                shutil.rmtree(old, ignore_errors=True)
        for rel, text in files.items():
            path = site / rel
            if not path.exists() or path.read_text() != text:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text)
        python = python_of(venv)
        for script, target in project.get("scripts", {}).items():
            module, func = target.split(":")
            path = python.parent / script
            text = f"#!{python}\nimport sys\nfrom {module} import {func}\nsys.exit({func}())\n"
            if not path.exists() or path.read_text() != text:
                path.write_text(text)
                path.chmod(0o755)
        (venv / "checkout.txt").write_text(f"{REPO}\n")
    return venv


def _entry_points(project: dict[str, Any]) -> str:
    groups = {"console_scripts": project.get("scripts", {}), **project.get("entry-points", {})}
    lines = []
    for group, entries in groups.items():
        lines.append(f"[{group}]")
        lines += [f"{key} = {value}" for key, value in entries.items()]
    return "\n".join(lines) + "\n"


def _prune(keep: Path) -> None:
    """Remove overlays of checkouts that are gone and shared venvs of the same name that no
    run used for ``UNUSED_DAYS`` (each under its lock, so never one in use)."""
    for overlay in (cache_dir() / "checkouts").glob("*"):
        try:
            gone = not Path((overlay / "checkout.txt").read_text().strip()).exists()
        except OSError:
            continue
        if gone:
            with _lock(overlay):
                shutil.rmtree(overlay, ignore_errors=True)
    prefix = keep.name.rsplit("-", 1)[0] + "-"
    for venv in cache_dir().glob(prefix + "*"):
        marker = venv / "rollout-cassette-venv.json"
        if venv == keep or not marker.exists():
            continue
        if time.time() - marker.stat().st_mtime > UNUSED_DAYS * 86400:
            with _lock(venv):
                shutil.rmtree(venv, ignore_errors=True)


def side_venv(name: str, recipe: Sequence[Sequence[str]]) -> Path | str:
    """The interpreter of side venv ``name``, built by ``pip install`` of each step of
    ``recipe`` in turn (``"{repo}"`` stands for this checkout, imported from where it is);
    or why it could not be built."""
    try:
        shared = _shared(name, recipe)
        if _resolve(recipe)[1] or not any("{repo}" in a for step in recipe for a in step):
            return python_of(shared)  # a venv of its own, or one that needs no checkout
        venv = _overlay(name, shared)
        _prune(keep=shared)
    except (RuntimeError, OSError) as exc:
        where = venv_path(name, recipe)
        return f"could not build the side venv {where} (this needs the package registry): {exc}"
    return python_of(venv)


def clean_env(*drop: str) -> dict[str, str]:
    """This process's environment without variables that would steer the child; a pytest
    started in the child runs in one process (the suite's ``-n`` is not for nested runs)."""
    gone = {"PYTHONDONTWRITEBYTECODE", "PYTHONPATH", *drop}
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in gone and (k == CACHE_VARIABLE or not k.startswith(_STEER))
    }
    env["PYTEST_ADDOPTS"] = "-o addopts=-ra"
    return env
