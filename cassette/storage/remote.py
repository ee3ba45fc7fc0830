"""Cassettes at an fsspec URL (``s3://``, ``memory://``; ``file://`` is a local path):
one listing, then the shard and part objects fetched in parallel into a private local
copy (:func:`materialize`); writing is :mod:`cassette.storage.remote_sink`'s."""

from __future__ import annotations

import atexit
import gzip
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import CassetteError, CassetteStorageError
from .lines import gunzip
from .store import SHARD_SUFFIXES

__all__ = [
    "CHECK",
    "described",
    "discard",
    "failed",
    "is_url",
    "keep",
    "listing",
    "local_or_url",
    "materialize",
    "private_dir",
    "remote_exists",
    "upload",
]

INSTALL_HINT = "pip install 'rollout-cassette[cloud]'"
CHECK = "{check}"  # in the fix of :func:`failed`: what to check
_CHECK_STORE = "check the URL and its credentials"
_CHECK_ENDPOINT = "check the endpoint (AWS_ENDPOINT_URL for S3) and the network"
# a failure to reach the store, by the name of the error's class or a base's
_UNREACHABLE = {
    "ConnectionError",  # the builtin's subclasses, botocore's and requests'
    "ClientConnectionError",  # aiohttp's (gcsfs, adlfs)
    "ConnectionClosedError",
    "Timeout",
    "TimeoutError",
}
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_PART = re.compile(r"^(?P<shard>.+)\.(?P<session>[0-9a-f]{12})\.(?P<seq>\d{6})\.part$")
_TEMP: set[Path] = set()  # private directories, removed at exit


def is_url(path: object) -> bool:
    """True for ``scheme://...`` other than ``file://`` (a local path)."""
    return isinstance(path, str) and bool(_URL.match(path)) and not path.startswith("file://")


def local_or_url(path: str | os.PathLike[str]) -> str | Path:
    """A ``file://`` URL as its local path, other URLs as they are, paths as Paths."""
    text = os.fspath(path)
    if text.startswith("file://"):
        return Path(text[len("file://") :])
    return text if is_url(text) else Path(text)


# fsspec's package for a store other than s3:// (the cloud extra brings s3fs)
_STORE_PACKAGES = {"gs": "gcsfs", "gcs": "gcsfs", "az": "adlfs", "abfs": "adlfs", "adl": "adlfs"}


def filesystem(url: str) -> tuple[Any, str]:
    """(fsspec filesystem, path within it) for ``url``; a one-line hint without fsspec."""
    try:
        from fsspec.core import url_to_fs  # type: ignore[import-untyped, import-not-found, unused-ignore]
    except ImportError:
        more = _STORE_PACKAGES.get(url.partition("://")[0].lower())
        hint = f"{INSTALL_HINT} {more}" if more else INSTALL_HINT
        raise CassetteError(f"{url} is a URL and reading it needs fsspec: {hint}") from None
    try:
        fs, root = url_to_fs(url)
    except ImportError as exc:  # fsspec knows the scheme, its package is missing (gcsfs)
        raise CassetteError(f"cannot open {url} ({exc}); {_install(exc)}") from None
    except ValueError as exc:  # a scheme fsspec does not know (Protocol not known: foo)
        raise CassetteError(
            f"cannot open {url} ({exc}); check the URL: a local path, or a store fsspec "
            "knows (s3://, gs://, memory://, file://, ...)"
        ) from None
    return fs, str(root).rstrip("/")


def _install(exc: ImportError) -> str:
    missing = getattr(exc.__cause__, "name", None) or exc.name
    package = str(missing).partition(".")[0] if missing else "s3fs"
    return INSTALL_HINT if package in {"fsspec", "s3fs"} else f"pip install {package}"


def described(exc: BaseException) -> str:
    """What a storage library raised, named (``NoCredentialsError: Unable to locate ...``)."""
    text = str(exc) or type(exc).__name__
    return text if isinstance(exc, OSError) else f"{type(exc).__name__}: {text}"


def failed(
    doing: str, url: str, exc: BaseException, fix: str = CHECK, *, kept: Path | None = None
) -> CassetteStorageError:
    """The one-line error for a store that failed while ``doing`` ``url`` (:data:`CHECK` in
    ``fix``: the endpoint if unreachable, else the URL and credentials)."""
    if isinstance(exc, CassetteStorageError):
        return exc
    unreachable = _unreachable(exc)
    fix = fix.replace(CHECK, _CHECK_ENDPOINT if unreachable else _CHECK_STORE)
    return CassetteStorageError(
        f"{doing} {url}: {described(exc)}; {fix}", url=url, unreachable=unreachable, kept=kept
    )


def _unreachable(exc: BaseException) -> bool:
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and all(current is not e for e in seen):
        seen.append(current)
        current = current.__cause__ or current.__context__
    return any(c.__name__ in _UNREACHABLE for e in seen for c in type(e).__mro__)


@atexit.register
def _remove_private_dirs() -> None:
    for path in _TEMP:
        shutil.rmtree(path, ignore_errors=True)


def private_dir() -> Path:
    """A new private directory, removed when the process exits (unless :func:`keep`)."""
    path = Path(tempfile.mkdtemp(prefix="cassette-url-"))
    _TEMP.add(path)
    return path


def discard(path: Path) -> None:
    """Remove the private directory that holds ``path`` now, not at exit."""
    for root in _roots(path):
        shutil.rmtree(root, ignore_errors=True)


def keep(path: Path) -> Path:
    """Keep the private directory that holds ``path`` when the process exits; ``path``."""
    _roots(path)
    return path


def _roots(path: Path) -> list[Path]:
    roots = [p for p in _TEMP if p == path or p in path.parents]
    _TEMP.difference_update(roots)
    return roots


@dataclass
class Shard:
    name: str
    whole: str | None = None  # the compacted object's path
    sessions: dict[str, list[tuple[int, str]]] = field(default_factory=dict)

    def paths(self) -> list[str]:
        """Its object, then each session's parts, in the order written."""
        ordered = sorted(sorted(parts) for parts in self.sessions.values())
        return ([self.whole] if self.whole else []) + [p for parts in ordered for _, p in parts]

    def next_seq(self) -> int:
        """The first part number of a session that continues this shard."""
        return 1 + max((seq for parts in self.sessions.values() for seq, _ in parts), default=-1)


@dataclass
class Listing:
    """One listing of a cassette URL: each shard's object and parts."""

    url: str
    fs: Any
    root: str
    directory: bool
    shards: dict[str, Shard]
    sizes: dict[str, int] = field(default_factory=dict)

    def paths(self) -> list[str]:
        return [p for shard in self.shards.values() for p in shard.paths()]


def listing(url: str) -> Listing:
    """One listing of ``url`` (a directory or one object) with unclosed writers' parts."""
    fs, root = filesystem(url)
    try:
        directory = url.endswith("/") or _is_dir(fs, root)
        sizes = _sizes(fs, root if directory else root.rsplit("/", 1)[0] if "/" in root else root)
    except Exception as exc:  # a storage library's own (botocore's)
        raise failed("cannot list", url, exc) from exc
    shards: dict[str, Shard] = {}
    for full in sizes:
        _file(shards, full, None if directory else root.rsplit("/", 1)[-1])
    return Listing(url, fs, root, directory, shards, sizes)


def _sizes(fs: Any, parent: str) -> dict[str, int]:
    """The size of each object under ``parent``, listed afresh."""
    fs.invalidate_cache(parent)
    try:
        info = fs.find(parent, maxdepth=1, detail=True)
    except OSError:  # no such bucket or prefix (yet): nothing there
        return {}
    return {
        str(k): int(v.get("size") or 0) for k, v in info.items() if v.get("type") != "directory"
    }


def _is_dir(fs: Any, root: str) -> bool:
    try:
        return bool(fs.isdir(root))
    except OSError:
        return False


def _file(shards: dict[str, Shard], full: str, only: str | None) -> None:
    """File the object ``full`` under its shard (``only``: the one shard wanted)."""
    name = full.rstrip("/").rsplit("/", 1)[-1]
    part = _PART.match(name)
    shard = part.group("shard") if part else name
    if not (shard == only if only else part or shard.endswith(SHARD_SUFFIXES)):
        return
    entry = shards.setdefault(shard, Shard(shard))
    if part:
        entry.sessions.setdefault(part.group("session"), []).append((int(part.group("seq")), full))
    else:
        entry.whole = full


def remote_exists(found: Listing) -> bool:
    """Whether the listing holds a non-empty object, or parts."""
    return any(
        s.sessions or (s.whole is not None and found.sizes.get(s.whole, 1))
        for s in found.shards.values()
    )


def _plain(data: bytes, url: str) -> bytes:
    return b"".join(gunzip([data], url, {})) if data[:2] == b"\x1f\x8b" else data


def shard_bytes(found: Listing, name: str, blobs: dict[str, bytes]) -> bytes:
    """A shard's lines: its object (decompressed), then each unclosed session's parts."""
    shard = found.shards[name]
    pieces = [_plain(blobs[shard.whole], found.url)] if shard.whole is not None else []
    pieces += [blobs[p] for p in shard.paths()[1 if shard.whole is not None else 0 :]]
    # each object ends its own line: a part cut short spoils its last line alone
    return b"".join(p if not p or p.endswith(b"\n") else p + b"\n" for p in pieces)


def fetch_all(found: Listing) -> dict[str, bytes]:
    """Every object of the listing, read in parallel."""
    paths = found.paths()
    if not paths:
        return {}
    try:
        got = found.fs.cat(paths, on_error="raise")
    except Exception as exc:  # OSError, or a storage library's own
        raise failed("cannot read", found.url, exc) from exc
    return {str(k): v for k, v in got.items()}


def materialize(url: str | Listing) -> Path:
    """A private local copy of the cassette at ``url`` (a missing path if it is missing)."""
    found = listing(url) if isinstance(url, str) else url
    local = private_dir()
    blobs = fetch_all(found)
    if found.directory:
        target = local / (found.root.rsplit("/", 1)[-1] or "cassette")
        target.mkdir()
        for name in found.shards:
            (target / name.removesuffix(".gz")).write_bytes(shard_bytes(found, name, blobs))
        return target
    name = found.root.rsplit("/", 1)[-1]
    target = local / name.removesuffix(".gz")
    if name in found.shards:
        target.write_bytes(shard_bytes(found, name, blobs))
    return target


def upload(local: Path, url: str) -> None:
    """Copy a local file, or a directory's files, to ``url`` (a failed upload removes what
    it added); :class:`CassetteStorageError` if it fails."""
    fs, root = filesystem(url)
    if local.is_dir():
        _upload_dir(fs, root, local, url)
        return
    data = local.read_bytes()
    if root.endswith(".gz") and data[:2] != b"\x1f\x8b":
        data = gzip.compress(data)
    try:
        fs.pipe_file(root, data)
    except Exception as exc:  # OSError, or a storage library's own
        raise failed("cannot upload", url, exc, f"nothing was written; {CHECK}") from exc


def _upload_dir(fs: Any, root: str, local: Path, url: str) -> None:
    objects = {f"{root}/{p.name}": p for p in sorted(local.iterdir()) if p.is_file()}
    there = set(listing(url.rstrip("/") + "/").sizes)
    added: list[str] = []
    try:
        for path, file in objects.items():  # one at a time: what was added is known
            fs.pipe_file(path, file.read_bytes())
            if path not in there:
                added.append(path)
    except Exception as exc:  # as above
        raise failed("cannot upload", url, exc, _undo(fs, added)) from exc


def _undo(fs: Any, added: list[str]) -> str:
    if not added:
        return f"nothing was added there; {CHECK}"
    try:
        fs.rm(added)
    except Exception:  # noqa: BLE001 - the store failed again: say what is left
        left = ", ".join(map(fs.unstrip_protocol, added))
        return f"{CHECK}, then delete the objects it added: {left}"
    return f"the objects it had added were removed; {CHECK}"
