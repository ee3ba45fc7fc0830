"""What ``cassette validate`` reports: :class:`Fault` (one problem at ``path:line``) and
:class:`Report` (the faults, the warnings, and what was read)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from ..format.entry import EnvIndex

__all__ = ["Fault", "Report"]


@dataclass(frozen=True)
class Fault:
    """One problem at ``path:line`` (line 0: the file as a whole)."""

    path: str
    line: int
    message: str

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        return f"{where}: {self.message}"


@dataclass
class Report:
    """What ``validate`` found: faults (the file is broken) and warnings (tolerated)."""

    faults: list[Fault] = field(default_factory=list)
    warnings: list[Fault] = field(default_factory=list)
    files: int = 0
    lines: Counter[str] = field(default_factory=Counter)
    episodes: set[EnvIndex] = field(default_factory=set)

    @property
    def ok(self) -> bool:
        return not self.faults

    def summary(self) -> str:
        kinds = ", ".join(f"{n} {kind}{'s' if n != 1 else ''}" for kind, n in self.lines.items())
        total = sum(self.lines.values())
        files = f"{self.files} file{'s' if self.files != 1 else ''}"
        episodes = f"{len(self.episodes)} episode{'s' if len(self.episodes) != 1 else ''}"
        return f"{files}, {total} lines ({kinds or 'none'}), {episodes}"
