"""``cassette import``: a ``cassette export`` dataset back into a cassette."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from .console import Console, plural, scratch_dir, uploaded, writable

__all__ = ["import_command"]


def _local_dataset(console: Console, src: str) -> Path:
    """The directory of the dataset ``src``; a URL's tables are fetched into a private one."""
    from ..storage.remote import is_url

    if is_url(src):
        return _fetched(console, src)
    path = Path(src.removeprefix("file://"))
    if path.is_file():  # a cassette, say: import reads what export wrote from one
        console.fail(
            f"{src} is a file, not a dataset; name the directory `cassette export` wrote "
            f"(`cassette export {src} DIR` writes one)"
        )
    if not path.is_dir():
        console.fail(f"no such directory: {src}; name the directory `cassette export` wrote")
    return path


def _fetched(console: Console, src: str) -> Path:
    from ..storage.remote import filesystem

    local = scratch_dir() / "dataset"
    local.mkdir()
    fs, root = filesystem(src)
    names = ("interactions.parquet", "episodes.parquet")
    try:
        got = fs.cat([f"{root}/{n}" for n in names], on_error="return")
    except Exception as exc:  # noqa: BLE001 - a storage library's own (botocore's)
        got = {f"{root}/{names[0]}": exc}
    for name in names:
        _save(console, src, local / name, got.get(f"{root}/{name}"), needed=name == names[0])
    return local


def _save(console: Console, src: str, local: Path, data: Any, *, needed: bool) -> None:
    from ..storage.remote import failed

    if isinstance(data, bytes):
        local.write_bytes(data)
    elif data is not None and not isinstance(data, FileNotFoundError):
        raise failed("cannot read", src, data)
    elif needed:
        console.fail(
            f"{src} holds no {local.name}: not a `cassette export` dataset; name the URL "
            "`cassette export` wrote"
        )


@click.command(name="import")
@click.argument("src", metavar="DATASET")
@click.argument("out", metavar="OUT")
@click.option("--force", is_flag=True, help="Overwrite OUT if it exists.")
def import_command(src: str, out: str, force: bool) -> None:
    """Turn a `cassette export` dataset back into a cassette that replays the same.

    \b
    Examples:
      cassette import runs/a-dataset/ runs/a-again.jsonl
    """
    from ..dataset.export import import_parquet

    console = Console()
    dataset = _local_dataset(console, src)
    target = writable(console, out, force)
    done = import_parquet(dataset, target)
    counts = f"{plural(done.interactions, 'interaction')}, {plural(done.episodes, 'episode')}"
    uploaded(console)
    console.print(f"imported {src} into {out}: {counts}, run id {done.run_id}")
