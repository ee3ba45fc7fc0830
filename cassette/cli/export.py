"""``cassette export``: a cassette as a dataset (Parquet tables and a dataset card)."""

from __future__ import annotations

from pathlib import Path

import click

from .console import Console, existing, plural, scratch_dir, upload_on_exit, uploaded

__all__ = ["export", "output_dir"]


def output_dir(console: Console, out: str, force: bool) -> Path:
    """The local directory for ``out`` (a URL: uploaded at the end), empty unless ``force``."""
    from ..storage.remote import is_url, listing

    target = Path(out.removeprefix("file://"))
    if is_url(out):
        taken = bool(listing(out.rstrip("/") + "/").sizes)
        target = scratch_dir() / "export"
        target.mkdir()
        upload_on_exit(target, out.rstrip("/") + "/")
    elif target.exists() and not target.is_dir():
        console.fail(f"{out} is a file; name a directory for the dataset, e.g. {out}.d/")
    else:
        taken = target.is_dir() and any(target.iterdir())
    if taken and not force:
        console.fail(f"{out} holds files; pass --force to overwrite them, or name another")
    return target


@click.command()
@click.argument("path")
@click.argument("out", metavar="OUT")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["parquet"]),
    default="parquet",
    show_default=True,
    help="The dataset's format.",
)
@click.option("--force", is_flag=True, help="Overwrite the files of OUT if it holds some.")
def export(path: str, out: str, fmt: str, force: bool) -> None:
    """Publish a cassette as a dataset: OUT/interactions.parquet, OUT/episodes.parquet
    and a dataset card OUT/README.md.

    datasets.load_dataset(OUT), pandas and duckdb read the tables; `cassette import`
    turns them back into a cassette. PATH and OUT may be URLs (s3://...).

    \b
    Examples:
      cassette export runs/a.jsonl runs/a-dataset/
      cassette export s3://bucket/runs/a/ s3://bucket/datasets/a/
    """
    from ..dataset.export import export_parquet

    console = Console()
    src = existing(console, path)
    target = output_dir(console, out, force)
    done = export_parquet(src, target)
    uploaded(console)
    counts = f"{plural(done.interactions, 'interaction')}, {plural(done.episodes, 'episode')}"
    console.print(f"exported {path} to {out} ({fmt}): {counts}, run id {done.run_id}")
