"""What the scrubber catches and what it spares, side by side with detect-secrets.

    python bench/bench_redact.py           # the planted set and the benign corpus
    python bench/bench_redact.py --quick   # a smaller benign corpus

(``bench/bench_redact_speed.py`` times the line gates and the record path against an
older rev.)

**Planted**: every sample of ``tests/helpers/fake_secrets.py`` (29 kinds, 5 samples
each) planted in each of 14 places a line can hold text (system prompt, user message,
tool-call arguments and results in history, response content and tool-call arguments,
a stream split three characters a chunk, a dict key, a request header, an error, the
outcome's info, the header's meta, ...), one cassette per place. A placement *leaks* if
one of its secrets is in the bytes written. detect-secrets (the anchor, ``pip install
detect-secrets``) scans the same cassettes recorded unscrubbed (``scan_file``, all its
plugins and default filters): a placement leaks past it unless each secret is inside a
value it reports.

**Benign**: the corpus of ``fixtures/benign_corpus.py`` (no secret in any message): the
messages our scrubber changes, the git SHAs, UUIDs and digests it loses, and the
messages detect-secrets flags (it flags, it does not change; a scrubber built on it
would change those).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import cassette
from bench._common import command_line
from cassette.redact import Redactor
from fixtures.benign_corpus import Message, build
from tests.helpers.fake_secrets import LOCATIONS, SAMPLES, Sample, plant

UNMARKED = ("aws_secret_text", "password_text", "basic_text", "hex32_text")


class Unscrubbed(Redactor):
    """Writes every line as it is (what detect-secrets is run on)."""

    def redact_line(self, line: dict[str, Any], raw: bytes, dumps: Any) -> Any:
        return line, 0


def record(path: Path, where: str, redactor: Redactor) -> bytes:
    meta = {"notes": [s.text for s in SAMPLES]} if where == "header meta" else None
    with cassette.open(path, "record", meta=meta, redact=redactor) as cas:
        for env, sample in enumerate(SAMPLES):
            plant(cas, env, where, sample.text)
    return path.read_bytes()


def detect_secrets_values(path: Path) -> list[str]:
    """Every secret value detect-secrets reports in the file at ``path``."""
    from detect_secrets.core.scan import scan_file
    from detect_secrets.settings import default_settings

    with default_settings():
        return [s.secret_value or "" for s in scan_file(str(path))]


def _caught(sample: Sample, found: list[str]) -> bool:
    return all(any(secret in value for value in found) for secret in sample.secrets)


def planted(tmp: Path) -> tuple[Counter[tuple[str, str]], Counter[tuple[str, str]], float]:
    """(leaks of ours, leaks past detect-secrets), by (kind, place); seconds ours took."""
    ours: Counter[tuple[str, str]] = Counter()
    theirs: Counter[tuple[str, str]] = Counter()
    took = 0.0
    for where in LOCATIONS:
        t0 = time.perf_counter()
        raw = record(tmp / f"ours-{len(ours)}-{where[:4]}.jsonl", where, Redactor())
        took += time.perf_counter() - t0
        path = tmp / f"raw-{where.replace(' ', '_')}.jsonl"
        record(path, where, Unscrubbed())
        found = detect_secrets_values(path)
        for sample in SAMPLES:
            key = (sample.kind, where)
            ours[key] += any(s.encode() in raw for s in sample.secrets)
            theirs[key] += not _caught(sample, found)
    return ours, theirs, took


def benign(corpus: list[Message], tmp: Path) -> tuple[int, int, int, float]:
    """(messages we change, identifiers we lose, messages detect-secrets flags, seconds)."""
    r = Redactor()
    changed = lost = 0
    t0 = time.perf_counter()
    for message in corpus:
        out, count = r.redact({"role": message.role, "content": message.text})
        changed += count > 0
        lost += sum(kept not in out["content"] for kept in message.keep)
    took = time.perf_counter() - t0
    from detect_secrets.core.scan import scan_file
    from detect_secrets.settings import default_settings

    owner: list[int] = []  # the message of each line of the file scanned
    path = tmp / "benign.txt"
    with path.open("w") as out:
        for i, message in enumerate(corpus):
            lines = message.text.splitlines() or [""]
            out.write("\n".join(lines) + "\n")
            owner += [i] * len(lines)
    with default_settings():
        flagged = {owner[s.line_number - 1] for s in scan_file(str(path))}
    return changed, lost, len(flagged), took


def _table(title: str, rows: list[tuple[str, int, int, int]]) -> None:
    print(f"\n{title}")
    print(f"{'':32} {'placed':>7} {'leak (ours)':>12} {'leak (detect-secrets)':>22}")
    for name, n, a, b in rows:
        print(f"{name:32} {n:7d} {a:12d} {b:22d}")


def report_planted(ours: Counter[tuple[str, str]], theirs: Counter[tuple[str, str]]) -> None:
    per = len(SAMPLES) // len({s.kind for s in SAMPLES})
    kinds = sorted({s.kind for s in SAMPLES}, key=lambda k: (k not in UNMARKED, k))

    def rows(names: list[str], pick: int) -> list[tuple[str, int, int, int]]:
        out = []
        for name in names:
            a = sum(v for k, v in ours.items() if k[pick] == name)
            b = sum(v for k, v in theirs.items() if k[pick] == name)
            n = per * len(LOCATIONS) if pick == 0 else len(SAMPLES)
            out.append((name, n, a, b))
        return out

    by_kind = rows(kinds, 0)
    _table("planted, by kind (the four without a prefix first)", by_kind)
    _table("planted, by place", rows(list(LOCATIONS), 1))
    total = len(SAMPLES) * len(LOCATIONS)
    unmarked = [r for r in by_kind if r[0] in UNMARKED]
    _table(
        "planted, in all",
        [
            ("every kind", total, sum(ours.values()), sum(theirs.values())),
            ("the four kinds without a prefix", *(sum(r[i] for r in unmarked) for i in (1, 2, 3))),
        ],
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smaller benign corpus")
    args = parser.parse_args()
    print(f"$ {command_line()}")
    print(f"detect-secrets {importlib.metadata.version('detect-secrets')}")
    with tempfile.TemporaryDirectory() as tmp:
        ours, theirs, took = planted(Path(tmp))
        report_planted(ours, theirs)
        print(f"(ours: {took:.1f} s to record the {len(SAMPLES) * len(LOCATIONS)} placements)")
        small = {"transcripts": 700, "tau2_rows": 30, "files_each": 2} if args.quick else {}
        corpus = build(**small)
        changed, lost, flagged, took = benign(corpus, Path(tmp))
    n = len(corpus)
    keep = sum(len(m.keep) for m in corpus)
    print(f"\nbenign corpus: {n} messages, {keep} SHAs/UUIDs/digests ({dict(_sources(corpus))})")
    print(f"{'':28} {'messages changed':>17} {'%':>6} {'identifiers lost':>17}")
    print(f"{'ours':28} {changed:17d} {100 * changed / n:6.2f} {lost:17d}")
    print(f"{'detect-secrets (flagged)':28} {flagged:17d} {100 * flagged / n:6.2f} {'':>17}")
    print(f"(ours: {took * 1e6 / n:.0f} µs a message)")


def _sources(corpus: list[Message]) -> Counter[str]:
    return Counter(m.source for m in corpus)


if __name__ == "__main__":
    main()
