"""Side venvs live in a cache outside the checkout and serve every checkout: one shared venv
per recipe, a tiny overlay per checkout that imports that checkout."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import sidevenv
from tests.helpers.sidevenv import clean_env, side_venv

PYPROJECT = """\
[project]
name = "rollout-cassette"
version = "0.0.7"
dependencies = []

[project.scripts]
cassette = "cassette.cli:main"

[project.entry-points.pytest11]
cassette = "cassette.testing.plugin"
"""
PROBE = (
    "import cassette, importlib.metadata as m; "
    "print(cassette.WHERE, m.version('rollout-cassette'), "
    "sorted(e.value for e in m.entry_points(group='pytest11') if e.name == 'cassette'))"
)


def checkout(root: Path, where: str) -> Path:
    """A checkout of a project named like this one, whose ``cassette`` says ``where``."""
    (root / "cassette").mkdir(parents=True)
    (root / "pyproject.toml").write_text(PYPROJECT)
    (root / "cassette" / "__init__.py").write_text(f"WHERE = {where!r}\n")
    (root / "cassette" / "cli.py").write_text(
        "import cassette\n\ndef main():\n    print('cli of', cassette.WHERE)\n    return 3\n"
    )
    return root


def probe(python: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = clean_env()
    return subprocess.run(
        [str(python), *args], capture_output=True, text=True, env=env, cwd=os.sep, check=False
    )


@pytest.mark.slow
def test_one_cached_venv_serves_each_checkout_from_where_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv(sidevenv.CACHE_VARIABLE, str(cache))
    a, b = checkout(tmp_path / "a", "A"), checkout(tmp_path / "b", "B")
    recipe = (("-e", "{repo}"),)

    monkeypatch.setattr(sidevenv, "REPO", a)
    python_a = side_venv("t", recipe)
    assert isinstance(python_a, Path), python_a
    monkeypatch.setattr(sidevenv, "REPO", b)
    python_b = side_venv("t", recipe)
    assert isinstance(python_b, Path), python_b

    # one shared venv, outside both checkouts, its marker naming neither
    shared = [p for p in cache.iterdir() if p.name != "checkouts"]
    assert [p.name.split("-")[0] for p in shared] == ["t"]
    marker = (shared[0] / "rollout-cassette-venv.json").read_text()
    assert str(a) not in marker and str(b) not in marker
    assert json.loads(marker)["steps"] == [[]]  # the project's (empty) dependencies
    assert python_a != python_b and cache in python_a.parents and cache in python_b.parents

    # each interpreter imports its own checkout, with the metadata an install would give
    for python, where in ((python_a, "A"), (python_b, "B")):
        out = probe(python, "-c", PROBE)
        assert out.stdout.split() == [where, "0.0.7", "['cassette.testing.plugin']"], out
        script = probe(python.parent / "cassette")
        assert (script.returncode, script.stdout) == (3, f"cli of {where}\n"), script

    # reused: a second call builds nothing (a file left in the shared venv survives)
    (shared[0] / "kept").write_text("")
    monkeypatch.setattr(sidevenv, "REPO", a)
    assert side_venv("t", recipe) == python_a
    assert (shared[0] / "kept").exists()

    # the overlay of a checkout that is gone is removed on the next use
    (b / "pyproject.toml").unlink()
    for path in sorted(b.rglob("*"), reverse=True):
        path.unlink() if path.is_file() else path.rmdir()
    b.rmdir()
    side_venv("t", recipe)
    assert not python_b.exists() and python_a.exists()


def test_a_recipe_that_names_a_file_of_the_checkout_gets_a_venv_of_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(sidevenv.CACHE_VARIABLE, str(tmp_path))
    monkeypatch.setattr(sidevenv, "REPO", checkout(tmp_path / "a", "A"))
    loose = sidevenv.venv_path("t", (("-e", "{repo}", "pytest"),))
    tied = sidevenv.venv_path("t", (("-r", "{repo}/requirements.txt"),))
    monkeypatch.setattr(sidevenv, "REPO", checkout(tmp_path / "b", "B"))
    assert sidevenv.venv_path("t", (("-e", "{repo}", "pytest"),)) == loose
    assert sidevenv.venv_path("t", (("-r", "{repo}/requirements.txt"),)) != tied
    assert loose.parent == tied.parent == tmp_path
    # --no-deps: the project alone, which the overlay brings; nothing to install for it
    assert sidevenv._resolve((("--no-deps", "{repo}", "x==1"),)) == ([["--no-deps", "x==1"]], False)


def test_the_cache_is_outside_the_checkout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(sidevenv.CACHE_VARIABLE, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", "/nowhere/cache")
    assert sidevenv.cache_dir() == Path("/nowhere/cache/rollout-cassette/venvs")
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert sidevenv.cache_dir() == Path.home() / ".cache" / "rollout-cassette" / "venvs"
    monkeypatch.setenv(sidevenv.CACHE_VARIABLE, "~/venvs")
    assert sidevenv.cache_dir() == Path.home() / "venvs"


@pytest.mark.slow
def test_a_pytest_started_with_clean_env_runs_in_one_process(tmp_path: Path) -> None:
    # the suite's addopts ask for xdist workers; a nested run (a side venv may not have
    # xdist) must not, and must not take itself for a worker
    test = tmp_path / "test_nested.py"
    body = "import os\n\ndef test_alone():\n    assert 'PYTEST_XDIST_WORKER' not in os.environ\n"
    test.write_text(body)
    config = sidevenv.REPO / "pyproject.toml"
    args = ["-c", str(config), "--rootdir", str(tmp_path), "-p", "no:cacheprovider", str(test)]
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", *args],
        capture_output=True,
        text=True,
        env=clean_env(),
        cwd=tmp_path,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "1 passed" in proc.stdout and "bringing up nodes" not in proc.stdout
