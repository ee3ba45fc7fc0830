"""The ``interactions`` table of ``cassette export``: one row per interaction that can be
served, in file order, its request rebuilt in full (:meth:`Index.iter_full`, which
leaves out the lines of a broken delta chain, warning) and written as JSON text.

The rows come from a lean :class:`~cassette.storage.index.Index` (each line's bytes, its
response checked as it was loaded), which warns about or refuses what it must.
"""

from __future__ import annotations

import warnings

import orjson

from ..errors import CassetteFormatError, CassetteWarning
from ..storage.index import Index, reason_of
from .export_table import Rows

__all__ = ["interaction_rows"]


def interaction_rows(index: Index) -> Rows:
    """One row per interaction of ``index`` that can be served, in file order."""
    rows = Rows()
    rows.headers, rows.outcomes = index.headers, index.outcomes
    for env in index.episodes():  # (in the index's order; counted below)
        rows.steps[env] = 0
    for entry, full in index.iter_full():
        try:
            entry.check()  # its meta.checksum: a damaged response is never exported
        except CassetteFormatError as exc:
            warnings.warn(
                f"{entry.source}:{entry.line}: left out of the export: {reason_of(exc)}",
                CassetteWarning,
                stacklevel=2,
            )
            continue
        line = entry.decoded()
        rows.add(
            entry.env_index,
            entry.channel,
            entry.step,
            entry.sha,
            orjson.dumps(full),
            full.get("model"),
            line.get("response"),
            line.get("error"),
            line.get("meta") or {},
        )
    return rows
