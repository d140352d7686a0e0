"""``--verify-diagnostics``: check the errors a file produces against the
``expected-error`` comments it carries, as ``mlir-opt`` does.

    // expected-error @+1 {{result has shape [8, 1], expected [1, 8]}}
    %1 = tsr.relayout %0 : (tensor<1x8xf32>) -> tensor<8x1xf32>

``@+N``/``@-N`` point N lines below/above the comment, no offset means the
comment's own line; the text between ``{{ }}`` must occur in the message.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .errors import Location, TesseraError

_EXPECT = re.compile(r"//\s*expected-(error|warning|remark)\s*(@[+-]?\d+|@above|@below)?\s*\{\{(.*?)\}\}")


@dataclass
class Expectation:
    line: int
    text: str
    comment_line: int
    matched: bool = False


def expectations(text: str, first_line: int) -> list[Expectation]:
    out = []
    for i, line in enumerate(text.splitlines()):
        lineno = first_line + i
        for m in _EXPECT.finditer(line):
            if m.group(1) != "error":
                continue
            off = m.group(2) or "@0"
            delta = {"@above": -1, "@below": 1}.get(off)
            target = lineno + (delta if delta is not None else int(off[1:]))
            out.append(Expectation(target, m.group(3), lineno))
    return out


def check(produced: list[TesseraError], expected: list[Expectation], filename: str) -> list[str]:
    """Messages for each unexpected error and each expectation not met."""
    problems = []
    for err in produced:
        line = err.location.line if err.location else 0
        hit = next((e for e in expected if not e.matched and e.line == line and e.text in err.message), None)
        if hit is None:
            problems.append(f"{err.location or filename}: error: unexpected error: {err.message}")
        else:
            hit.matched = True
    for e in expected:
        if not e.matched:
            problems.append(
                f"{Location(filename, e.comment_line, 1)}: error: expected error \"{e.text}\" "
                f"on line {e.line} was not produced"
            )
    return problems
