"""The house rules, read from the source: cassette's modules import no circle and point down
the layers of DESIGN.md, few modules sit at the package's root, a module with public names
lists them in ``__all__`` and every listed name exists; tests/ mirrors the package, no test
module imports another and nothing is named after an issue number."""

from __future__ import annotations

import ast
import importlib
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "cassette"
TESTS = ROOT / "tests"

# What the house still holds today, tolerated until the change that removes it is merged;
# then its entry goes (an empty allow-list is the goal).
KNOWN_CIRCLES: list[frozenset[str]] = []
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
ENTRY_POINTS = {"cassette.__main__": "cli"}
MAX_ROOT_MODULES = 12


@cache
def modules() -> dict[str, Path]:
    """Every module of cassette by dotted name (a package by its own name)."""
    return {
        ".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__"): p
        for p in sorted(PKG.rglob("*.py"))
    }


def import_names(node: ast.AST, pkg: str) -> list[str]:
    """The dotted names an import statement names (a relative one made absolute from the
    package ``pkg``; the facade only where a name is not a module of its own); [] for any
    other node."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    parts = pkg.split(".")
    base = parts[: len(parts) - node.level + 1] if node.level else []
    mod = ".".join([*base, node.module] if node.module else base)
    return [f"{mod}.{a.name}" for a in node.names] + [mod] * (mod != "cassette")


def module_of(target: str) -> str:
    """The module of cassette that a dotted name is in, or ""."""
    while target and target not in modules():
        target = target.rpartition(".")[0]
    return target


def imported(name: str, path: Path) -> set[str]:
    """The modules of cassette that ``name`` imports, at module level or lazily; the facade
    ``cassette`` as ``"cassette"``, and never another package that holds ``name`` (its own
    ``__init__`` is not an import of it, as in house.py)."""
    pkg = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = {module_of(t) for node in ast.walk(tree) for t in import_names(node, pkg)}
    own = {t for t in found if f"{name}.".startswith(f"{t}.")} - ({"cassette"} - {name})
    return found - own - {""}


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


def statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """A module's top-level statements, those in its ``if``/``try``/``with`` blocks too."""
    for node in body:
        yield node
        if isinstance(node, (ast.If, ast.Try, ast.With)):
            yield from statements(node.body)
            yield from statements([*getattr(node, "orelse", []), *getattr(node, "finalbody", [])])
            yield from statements([s for h in getattr(node, "handlers", []) for s in h.body])


def targets_of(node: ast.stmt) -> list[ast.expr]:
    """What an assignment assigns to ([] for any other statement)."""
    if isinstance(node, ast.Assign):
        return node.targets
    return [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else []


def defined(tree: ast.Module) -> set[str]:
    """The names a module's top level defines: functions, classes, assignments."""
    names: set[str] = set()
    for node in statements(tree.body):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        names |= {n.id for t in targets_of(node) for n in ast.walk(t) if isinstance(n, ast.Name)}
    return names


def imports(tree: ast.Module) -> set[str]:
    """The names a module's top level binds by importing."""
    return {
        (a.asname or a.name).split(".")[0]
        for node in statements(tree.body)
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for a in node.names
    }


def tree_of(name: str) -> ast.Module:
    return ast.parse(modules()[name].read_text(encoding="utf-8"))


def listed(name: str) -> list[str] | None:
    """The names of a module's ``__all__`` (a literal list); None without one."""
    for node in tree_of(name).body:
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets_of(node)):
            value = getattr(node, "value", None)
            assert isinstance(value, (ast.List, ast.Tuple)), f"{name}: __all__ is a literal list"
            return [ast.literal_eval(e) for e in value.elts]
    return None


@pytest.mark.parametrize("name", sorted(modules()))
def test_a_module_with_public_names_has_an_all(name: str) -> None:
    public = sorted(n for n in defined(tree_of(name)) if not n.startswith("_"))
    if public and name not in KNOWN_WITHOUT_ALL:
        assert listed(name) is not None, f"{name} has no __all__ for {public}"


@pytest.mark.parametrize("name", [n for n in sorted(modules()) if listed(n) is not None])
def test_every_name_an_all_lists_exists(name: str) -> None:
    tree = tree_of(name)
    bound = defined(tree) | imports(tree)
    module = importlib.import_module(name) if "__getattr__" in bound else None
    # a module-level __getattr__ serves names on first use: ask the module
    missing = [n for n in listed(name) or [] if not (n in bound or hasattr(module, n))]
    assert not missing, f"{name}.__all__ names what it does not define: {missing}"


# -- tests/ ------------------------------------------------------------------------------------
def python_files() -> list[Path]:
    """The Python files of tests/, its fixtures (data and scripts) left out."""
    return [p for p in TESTS.rglob("*.py") if "fixtures" not in p.relative_to(TESTS).parts]


NOT_MIRRORS = {"fixtures", "helpers", "frameworks", "docs"}  # data, helpers, the real
# frameworks' runs, the documentation's examples and reference (README.md, docs/)


def test_test_folders_mirror_the_package() -> None:
    folders = [p.relative_to(TESTS) for p in TESTS.rglob("*") if p.is_dir()]
    mirrors = [f for f in folders if f.parts[0] not in NOT_MIRRORS and f.name != "__pycache__"]
    assert [f for f in sorted(mirrors) if not (PKG / f / "__init__.py").is_file()] == []


def imports_another(name: str) -> bool:
    """Whether importing ``name`` from tests/ imports a test module or a conftest."""
    parts = name.split(".")
    outside_helpers = parts[0] == "tests" and parts[1:2] != ["helpers"]
    return outside_helpers or any(p == "conftest" or p.startswith("test_") for p in parts)


def test_no_test_module_imports_another() -> None:
    """Shared pieces are fixtures in a conftest.py or plain helpers in tests/helpers."""
    wrong = [
        f"{path.relative_to(ROOT)}: {name}"
        for path in python_files()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if not getattr(node, "level", 0)
        for name in import_names(node, "")
        if imports_another(name)
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
