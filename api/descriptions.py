"""OpenAPI descriptions that take a module's rules from its docstring, so each rule is written once: the
module that applies it states it, and the routes built on that module show it to API users."""

from __future__ import annotations

import inspect
import re
from types import ModuleType

# An RST literal (``name``); markdown, which OpenAPI descriptions are written in, uses one backtick.
_RST_LITERAL = re.compile(r"``(.+?)``", re.DOTALL)


def module_rules(module: ModuleType, *, paragraphs: slice = slice(None)) -> str:
    """The paragraphs of ``module``'s docstring after its summary (those ``paragraphs`` picks, such as
    ``slice(1)`` for the first when the next ones say how the module runs), as markdown: literals in
    single backticks, and the lines a paragraph or a ``- `` list item is wrapped over joined into one."""
    body = inspect.cleandoc(module.__doc__ or "").partition("\n\n")[2]
    blocks = [block for block in body.split("\n\n") if block.strip()][paragraphs]
    return "\n\n".join(_unwrap(_RST_LITERAL.sub(r"`\1`", block)) for block in blocks)


def _unwrap(block: str) -> str:
    lines: list[str] = []
    for line in block.splitlines():
        if lines and not line.startswith("- "):
            lines[-1] = f"{lines[-1]} {line.strip()}"
        else:
            lines.append(line.strip())
    return "\n".join(lines)
