"""Module attributes a patch (``patch_tau2``, ``patch_litellm``) replaced, and putting them
back, also where a module imported while the patch was on copied the wrapper."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from types import ModuleType
from typing import Any, ClassVar

__all__ = ["ModulePatches", "module_values", "snapshot"]


class ModulePatches:
    """The attributes one patch replaced, in order, and its wrappers (by id)."""

    active: ClassVar[list[ModulePatches]] = []  # the patches that are on

    def __init__(self) -> None:
        self.patched: list[tuple[ModuleType, str, Any]] = []  # (module, attribute, old)
        self._wrappers: dict[int, tuple[Any, Any]] = {}  # id(wrapper) -> (wrapper, original)

    @classmethod
    def wrapper(cls, value: Any) -> bool:
        """Whether ``value`` is a wrapper that a patch which is on put in place."""
        return any(id(value) in patch._wrappers for patch in cls.active)

    def set(self, module: ModuleType, attr: str, wrapper: Any) -> None:
        """Replace ``module.attr`` by ``wrapper``, remembering what it was."""
        if self not in self.active:
            self.active.append(self)
        old = vars(module)[attr]
        self.patched.append((module, attr, old))
        self._wrappers[id(wrapper)] = (wrapper, old)
        setattr(module, attr, wrapper)

    def restore(self) -> None:
        """Put every replaced attribute back, last first, then the wrappers' copies."""
        for module, attr, old in reversed(self.patched):
            setattr(module, attr, old)
        self.patched.clear()
        for _, module, attr, value in module_values():
            hit = self._wrappers.get(id(value))
            if hit is not None and hit[0] is value:
                setattr(module, attr, hit[1])
        if self in self.active:
            self.active.remove(self)


def snapshot(mapping: dict[str, Any]) -> dict[str, Any]:
    """A copy of a dict that may change while copied (a finalizer or thread importing)."""
    for _ in range(100):
        with contextlib.suppress(RuntimeError):  # changed while being copied
            return mapping.copy()
    return mapping.copy()  # pragma: no cover


def module_values() -> Iterator[tuple[str, ModuleType, str, Any]]:
    """(name, module, attribute, value) of every loaded module but this package's."""
    seen: set[int] = set()
    for name, module in snapshot(sys.modules).items():
        if isinstance(module, ModuleType) and id(module) not in seen:
            seen.add(id(module))
            if not name.startswith("cassette."):
                for attr, value in snapshot(vars(module)).items():
                    yield name, module, attr, value
