"""The reference pages name everything the code offers: every public name, every command,
every environment variable the package reads, every error class; the file format page
shows the JSON Schema the code generates."""

from __future__ import annotations

import json
import re

import click

import cassette
import cassette.errors
from cassette.cli import main
from tests.helpers.docblocks import REPO, blocks

REFERENCE = REPO / "docs" / "reference"


def _commands(group: click.Group, prefix: str = "cassette") -> list[str]:
    """Every command under ``group``, nested groups walked, as typed: ``cassette show``."""
    ctx = click.Context(group, info_name=prefix)
    found = []
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None, name
        found.append(f"{prefix} {name}")
        if isinstance(command, click.Group):
            found += _commands(command, f"{prefix} {name}")
    return found


def test_every_public_name_is_rendered_in_the_python_api_page() -> None:
    page = (REFERENCE / "python-api.md").read_text()
    rendered = set(re.findall(r"^::: cassette\.(\w+)$", page, re.M))
    assert sorted(set(cassette.__all__) - rendered) == []


def test_every_command_is_in_the_cli_page() -> None:
    page = (REFERENCE / "cli.md").read_text()
    commands = _commands(main)
    assert len(commands) >= 15
    assert [c for c in commands if f"| `{c}" not in page] == []
    assert ":module: cassette.cli\n    :command: main" in page  # and the generated part


def test_every_environment_variable_the_package_reads_is_documented() -> None:
    read = {
        name
        for path in (REPO / "cassette").rglob("*.py")
        for name in re.findall(r"CASSETTE_[A-Z0-9_]*[A-Z0-9]", path.read_text())
    }
    page = (REFERENCE / "environment.md").read_text()
    assert len(read) >= 15
    assert sorted(n for n in read if f"| `{n}` |" not in page) == []


def test_every_error_class_is_in_the_errors_page() -> None:
    classes = [
        name
        for name in cassette.errors.__all__
        if isinstance(obj := getattr(cassette.errors, name), type)
        and issubclass(obj, (cassette.CassetteError, Warning))
    ]
    page = (REFERENCE / "errors.md").read_text()
    assert len(classes) == 9
    assert [c for c in classes if f"| `{c}` |" not in page or f"── {c} " not in page] == []


def test_the_file_format_page_shows_the_schema_the_code_generates() -> None:
    page = REFERENCE / "file-format.md"
    (shown,) = [b.text for b in blocks(page) if b.lang == "json" and '"$defs"' in b.text]
    fix = "python -c 'import json, cassette; print(json.dumps(cassette.json_schema(), indent=2))'"
    assert json.loads(shown) == cassette.json_schema(), f"regenerate it with {fix}"
