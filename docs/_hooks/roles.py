"""An mkdocs hook: the Sphinx roles of the package's docstrings (``:func:`fork```,
``:class:`.Cassette```) shown as the code they name, without the role's prefix, on the
pages mkdocstrings renders."""

from __future__ import annotations

import re
from typing import Any

__all__ = ["on_page_content"]

_ROLE = re.compile(r":(?:py:)?(?:func|class|meth|mod|attr|data|exc|obj):(<code>)\.?")


def on_page_content(html: str, **_: Any) -> str:
    return _ROLE.sub(r"\1", html)
