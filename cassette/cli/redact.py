"""``cassette redact``: scrub secrets from an existing cassette."""

from __future__ import annotations

import re
from pathlib import Path

import click

from .console import Console, existing, plural, upload_on_exit, uploaded, working, writable

__all__ = ["redact"]


@click.command()
@click.argument("src", metavar="IN")
@click.argument("out", metavar="[OUT]", required=False)
@click.option("--key", "keys", multiple=True, help="Also scrub the value of this key; repeatable.")
@click.option(
    "--pattern",
    "patterns",
    multiple=True,
    help="Also scrub strings that match this regular expression; repeatable.",
)
@click.option("--force", is_flag=True, help="Overwrite OUT if it exists.")
def redact(
    src: str, out: str | None, keys: tuple[str, ...], patterns: tuple[str, ...], force: bool
) -> None:
    """Scrub secrets from an existing cassette.

    API keys, auth headers and tokens are replaced, in place when OUT is omitted
    (atomically). request_sha256 stays as it was recorded; each interaction that changed
    gains meta.redacted.

    \b
    Examples:
      cassette redact runs/a.jsonl
      cassette redact runs/a.jsonl shared/a.jsonl --key session_id --pattern 'tok_\\w+'
    """
    from ..dataset.convert import redact
    from ..redact import Redactor

    console = Console()
    path = existing(console, src)
    out = _output(console, path, src, out, force)
    _check_patterns(console, patterns)
    redactor = Redactor(extra_keys=keys, extra_patterns=patterns)
    try:
        with working(console, f"redacting {path.name}", [path], lines=True) as advance:
            counts = redact(path, Path(out) if out else None, redactor=redactor, progress=advance)
    except OSError as exc:
        console.fail(f"cannot rewrite {out or src}: {exc.strerror}; check the path and permissions")
    uploaded(console)
    console.print(_done(src, out, counts))


def _done(src: str, out: str | None, counts: dict[str, int]) -> str:
    where = f"{src} (in place)" if out is None else f"{src} into {out}"
    if not counts:
        return f"nothing to redact in {where}"
    per_type = ", ".join(f"{kind} {n}" for kind, n in sorted(counts.items()))
    return f"redacted {plural(sum(counts.values()), 'value')} in {where}: {per_type}"


def _check_patterns(console: Console, patterns: tuple[str, ...]) -> None:
    for pattern in patterns:
        try:
            re.compile(pattern)
        except re.error as exc:
            console.fail(f"--pattern {pattern!r} is not a regular expression ({exc}); fix it")


def _output(console: Console, path: Path, src: str, out: str | None, force: bool) -> str | None:
    """Where to write (None: in place), if it may be (a URL: a local file uploaded at the end)."""
    from ..storage.remote import is_url

    if out is None and is_url(src):  # in place: the scrubbed copy goes back to the URL
        upload_on_exit(path, src)
    if out is None or is_url(out):
        return out and str(writable(console, out, force))
    if out.endswith("/") and not path.is_dir():  # Path() drops the "/"
        console.fail(f"{out} is a directory; name the output file, e.g. {out.rstrip('/')}.jsonl")
    _check_local(console, path, src, Path(out), force)
    return out


def _check_local(console: Console, path: Path, src: str, out: Path, force: bool) -> None:
    if not out.exists():
        return
    if not force and not _same(path, out):
        console.fail(
            f"{out} exists; pass --force to overwrite it, name another OUT, or leave OUT out "
            f"to scrub {src} in place"
        )
    if path.is_dir() != out.is_dir():
        console.fail(f"{src} and {out} must both be files or both be directories")


def _same(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return False
