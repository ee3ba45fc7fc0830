"""The house rules, read from the source: cassette's modules import no circle and point down
the layers of DESIGN.md, few modules sit at the package's root, a module with public names
lists them in ``__all__`` and every listed name exists; in tests/, no test module imports
another and nothing is named after an issue number."""

from __future__ import annotations

import ast
import importlib
import re
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "cassette"
TESTS = ROOT / "tests"

# What the house still holds today, tolerated until the change that removes it is merged;
# then its entry goes (an empty allow-list is the goal).
KNOWN_CIRCLES = [
    frozenset(circle.split())
    for circle in (
        "cassette.storage.remote cassette.storage.remote_sink",
        "cassette.replay.cassette cassette.replay.fork",
        "cassette.diff.align cassette.diff.causes cassette.diff.compare cassette.diff.forks"
        " cassette.diff.noise cassette.diff.stats cassette.diff.types",
        "cassette.testing.plugin_settings cassette.testing.unused",
        "cassette.testing.handler cassette.testing.openai_answers cassette.testing.server",
    )
]
KNOWN_UPWARD_IMPORTS: set[tuple[str, str]] = set()  # (importer, imported)
KNOWN_WITHOUT_ALL = {"cassette.format.version"}

# Layer by layer, what a module may import besides its own layer (DESIGN.md, "Layout"):
# root (errors, types) <- format <- redact <- storage <- replay <- dataset <- diff <- view.
# redact uses only root and format (storage scrubs secrets as it writes); adapters use
# replay and below, autorecord and serve record through the adapters; the facade
# (``cassette/__init__``) re-exports replay and below; testing uses anything but cli; cli
# uses anything, and nothing imports cli (``python -m cassette`` is part of cli).
BELOW: dict[str, set[str]] = {"root": set(), "format": {"root"}}
BELOW["redact"] = BELOW["format"] | {"format"}
BELOW["storage"] = BELOW["redact"] | {"redact"}
BELOW["replay"] = BELOW["storage"] | {"storage"}
BELOW["facade"] = BELOW["replay"] | {"replay"}
BELOW["dataset"] = BELOW["facade"] | {"facade"}
BELOW["adapters"] = BELOW["facade"] | {"facade"}
BELOW["autorecord"] = BELOW["serve"] = BELOW["adapters"] | {"adapters"}
BELOW["diff"] = BELOW["dataset"] | {"dataset"}
BELOW["view"] = BELOW["diff"] | {"diff"}
BELOW["testing"] = set(BELOW) - {"testing"}
BELOW["cli"] = set(BELOW) | {"testing"}
ENTRY_POINTS = {"cassette.__main__": "cli", "cassette.pytest_plugin": "testing"}
MAX_ROOT_MODULES = 12


@cache
def modules() -> dict[str, Path]:
    """Every module of cassette by dotted name (a package by its own name)."""
    return {
        ".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__"): p
        for p in sorted(PKG.rglob("*.py"))
    }


def imported(name: str, path: Path) -> set[str]:
    """The modules of cassette that ``name`` imports, at module level or lazily; the facade
    ``cassette`` as ``"cassette"``, and never another package that holds ``name`` (its own
    ``__init__`` is not an import of it, as in house.py)."""
    pkg = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = pkg.split(".")[: len(pkg.split(".")) - node.level + 1] if node.level else []
            mod = ".".join([*base, node.module] if node.module else base)
            targets = [f"{mod}.{a.name}" for a in node.names] + [mod] * (mod != "cassette")
        else:
            continue
        for target in targets:
            while target and target not in modules():
                target = target.rpartition(".")[0]
            if target and (target == "cassette" != name or not f"{name}.".startswith(target + ".")):
                found.add(target)
    return found


@cache
def graph() -> dict[str, set[str]]:
    return {name: imported(name, path) for name, path in modules().items()}


def circles() -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm), the
    facade left out: every module lies under it."""
    edges = {a: bs - {"cassette"} for a, bs in graph().items() if a != "cassette"}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = {stack.pop()}
            while v not in component:
                component.add(stack.pop())
            if len(component) > 1:
                found.append(component)

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def layer(name: str) -> str:
    if name == "cassette":
        return "facade"
    if name in ENTRY_POINTS:
        return ENTRY_POINTS[name]
    top = name.split(".")[1]
    return top if (PKG / top).is_dir() else "root"


def test_no_import_circle() -> None:
    new = [c for c in circles() if not any(c <= known for known in KNOWN_CIRCLES)]
    assert not new, "import circles: " + "; ".join(" <-> ".join(sorted(c)) for c in new)


def test_every_layer_package_has_a_rule() -> None:
    packages = {p.name for p in PKG.iterdir() if (p / "__init__.py").is_file()}
    assert packages <= set(BELOW), sorted(packages - set(BELOW))


def test_imports_point_down_the_layers() -> None:
    upward = {
        (a, b)
        for a, targets in graph().items()
        for b in targets
        if layer(b) != layer(a) and layer(b) not in BELOW[layer(a)]
    }
    new = sorted(upward - KNOWN_UPWARD_IMPORTS)
    assert not new, "\n".join(f"{a} ({layer(a)}) imports {b} ({layer(b)})" for a, b in new)


def test_few_modules_at_the_root() -> None:
    assert len(list(PKG.glob("*.py"))) <= MAX_ROOT_MODULES


def top_level(tree: ast.Module) -> tuple[set[str], set[str]]:
    """The names a module's top level defines (functions, classes, assignments) and those it
    imports, also in its ``if``/``try``/``with`` blocks (not inside functions or classes)."""
    defined: set[str] = set()
    imports: set[str] = set()
    todo: list[ast.stmt] = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            imports |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            defined |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(node, (ast.If, ast.Try, ast.With)):
            todo += node.body + getattr(node, "orelse", []) + getattr(node, "finalbody", [])
            todo += [stmt for h in getattr(node, "handlers", []) for stmt in h.body]
    return defined, imports


def listed(tree: ast.Module) -> list[str] | None:
    """The names of a literal ``__all__``; None without one."""
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AnnAssign):
            targets = [node.target]
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            value = node.value
            assert isinstance(value, (ast.List, ast.Tuple)), "__all__ is a literal list"
            return [ast.literal_eval(e) for e in value.elts]
    return None


@pytest.mark.parametrize("name", sorted(modules()))
def test_a_module_with_public_names_lists_them_and_each_exists(name: str) -> None:
    tree = ast.parse(modules()[name].read_text(encoding="utf-8"))
    names = listed(tree)
    defined, imports = top_level(tree)
    bound = defined | imports
    if names is None:
        public = sorted(n for n in defined if not n.startswith("_"))
        assert not public or name in KNOWN_WITHOUT_ALL, f"{name} has no __all__ for {public}"
        return
    if "__getattr__" in bound:  # names served on first use: ask the module
        module = importlib.import_module(name)
        missing = [n for n in names if not hasattr(module, n)]
    else:
        missing = [n for n in names if n not in bound]
    assert not missing, f"{name}.__all__ names what it does not define: {missing}"


def test_the_known_lists_hold_only_what_exists() -> None:
    """An allow-list entry names modules that exist (a typo would tolerate nothing)."""
    named = set().union(*KNOWN_CIRCLES, *KNOWN_UPWARD_IMPORTS, KNOWN_WITHOUT_ALL)
    assert named <= set(modules()), sorted(named - set(modules()))


# -- tests/ ------------------------------------------------------------------------------------
def python_files(folder: Path = TESTS) -> list[Path]:
    """The Python files of tests/, its fixtures (data and scripts) left out."""
    return [p for p in folder.rglob("*.py") if "fixtures" not in p.relative_to(folder).parts]


def test_no_test_module_imports_another() -> None:
    """Shared pieces are fixtures in a conftest.py or plain helpers in tests/helpers."""
    wrong = []
    for path in python_files():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            wrong += [
                f"{path.relative_to(ROOT)}: {n}"
                for n in names
                if n.startswith("tests.") and not n.startswith("tests.helpers")
            ]
    assert not wrong, wrong


ISSUE = re.compile(r"issue_?\d|(^|_)gh_?\d", re.I)


def test_nothing_is_named_after_an_issue_number() -> None:
    named = [str(p.relative_to(ROOT)) for p in TESTS.rglob("*") if ISSUE.search(p.name)]
    for path in python_files():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        named += [
            f"{path.relative_to(ROOT)}::{n.name}"
            for n in ast.walk(tree)
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            and ISSUE.search(n.name)
        ]
    assert not named, named
