"""A part object of a shard deleted, emptied, cut short, edited or replaced by garbage
before anyone compacts or replays it: replay serves what is intact, and refuses the rest
with a CassetteError (a miss, a broken delta chain, a checksum, a line that is not JSON),
never a wrong response and never another exception."""

from __future__ import annotations

import warnings

import pytest

import cassette
from tests.helpers.s3server import S3
from tests.helpers.worker import request_for, response_for

fsspec = pytest.importorskip("fsspec")
pytest.importorskip("s3fs")
pytest.importorskip("moto.server")


class _Stop(Exception):
    pass


def _record_in_parts(url: str) -> None:
    """Six calls, one part each, left as parts (the run fails: as after a kill)."""
    with cassette.open(url, "record") as cas:
        for step in range(6):
            cas.call(request_for(0, step), live=lambda s=step: response_for(0, s), step=step)
            cas._sink.flush_part()  # type: ignore[union-attr]
        raise _Stop


DAMAGE = {
    "deleted": None,
    "emptied": lambda data: b"",
    "cut": lambda data: data[: len(data) // 2],
    "edited": lambda data: data.replace(b"answer", b"ANSWER"),
    "garbage": lambda data: b"\x00\xff" * 50,
    "not-gzip": lambda data: b"\x1f\x8b" + b"\x00" * 30,
}


@pytest.mark.parametrize("how", sorted(DAMAGE))
@pytest.mark.parametrize("which", [0, 3])
def test_a_damaged_part_is_never_served_wrong(s3: S3, how: str, which: int) -> None:
    url = s3.url(f"damage-{how}-{which}/")
    with pytest.raises(_Stop):
        _record_in_parts(url)
    fs = fsspec.filesystem("s3")
    parts = sorted(fs.find(url.removeprefix("s3://")))
    assert len(parts) == 6
    change = DAMAGE[how]
    if change is None:
        fs.rm(parts[which])
    else:
        fs.pipe_file(parts[which], change(fs.cat(parts[which])))
    served = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            cas = cassette.open(url, "replay")
        except cassette.CassetteError:
            return  # refused whole: a line that is not JSON
        with cas:
            for step in range(6):
                try:
                    got = cas.call(request_for(0, step), live=None, step=step)
                except cassette.CassetteError:
                    continue
                assert got == response_for(0, step)
                served.append(step)
    assert which not in served  # the damaged call is refused
    assert set(range(which)) <= set(served)  # what came before is intact


def test_a_part_cut_short_spoils_its_own_last_line_alone(s3: S3) -> None:
    """Objects are read back one after the other: a part cut short mid-line (damaged in
    the store) leaves that line unreadable, but the first line of the next part stays
    whole, so `validate` names one line and the rest is read (before, the next
    part's first line was glued to the cut one: two calls spoiled)."""
    from cassette.dataset.validate import validate
    from cassette.storage.remote import listing, materialize

    url = s3.url("cut-part/")
    with pytest.raises(_Stop):
        _record_in_parts(url)
    fs = fsspec.filesystem("s3")
    parts = sorted(fs.find(url.removeprefix("s3://")))
    data = fs.cat(parts[2])
    fs.pipe_file(parts[2], data[: len(data) - 40])  # its only line, cut short
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = validate(materialize(listing(url)))
    assert [f.line for f in report.faults if "not valid JSON" in f.message] == [4]
    assert report.lines["interaction"] == 5  # the five other calls' lines read whole
