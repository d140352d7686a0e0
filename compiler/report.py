"""What tessera did with each graph it was given: a :class:`GraphReport`.

    with collect_reports() as reports:
        torch.compile(model, backend="tessera")(x)
    print(reports[0].summary())
    # tessera: forward graph compiled: 3 tessera kernels, 2 tessera conv kernels,
    #   library onednn_conv x1; ATen: aten.sort.values x1 (no tsr form)

A graph is ``compiled`` (a host program of tessera's kernels and library
calls, perhaps with some ops through ATen), ``interpreter`` (imported, but its
kernels could not be built: the reference interpreter runs it) or ``aten``
(not imported: Dynamo's graph runs as captured). Each report is logged on the
``tessera.report`` logger (INFO; ``options={"report": True}`` prints it) and
handed to every active :func:`collect_reports`. With ``options={"strict": True}``
a graph that would not be ``compiled`` raises :class:`FallbackError` instead.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field

from .errors import TesseraError

log = logging.getLogger("tessera.report")

COMPILED, INTERPRETER, ATEN = "compiled", "interpreter", "aten"


class FallbackError(TesseraError):
    """A graph tessera would not compile, under ``strict``."""

    @classmethod
    def of(cls, report: GraphReport) -> FallbackError:
        return cls(f"{report.summary()} (strict: no fallback)")


@dataclass
class GraphReport:
    kind: str
    """``forward`` or ``backward``."""
    status: str = COMPILED
    """``compiled``, ``interpreter`` or ``aten``."""
    reason: str = ""
    """Why the graph is not compiled (empty when it is)."""
    kernels: int = 0
    """Fused kernels tessera compiled for the graph."""
    conv_kernels: int = 0
    """Convolutions on tessera's own conv kernel."""
    library: collections.Counter = field(default_factory=collections.Counter)
    """Library calls by kind (``onednn_conv``, ``mkl_linear``, ``tessera_int8_gemm``)."""
    aten_ops: collections.Counter = field(default_factory=collections.Counter)
    """Ops of a compiled graph that run through ATen, by ``name (reason)``: the fallbacks."""
    views: collections.Counter = field(default_factory=collections.Counter)
    """View ops left on the host (ATen makes a view: no data moves, not a fallback)."""
    dynamic: bool = False
    """Compiled once for symbolic sizes: its kernels take their sizes at run time."""
    size_class: bool = False
    """Compiled for one size class of a graph of symbolic sizes (``size_specialization``):
    a part of it could not take its sizes at run time."""
    cached: str = ""
    """Where a compiled graph's program came from when it was not compiled in this
    process: ``local`` or ``remote`` (the graph cache's tiers, ``graph_cache.py``)."""

    @property
    def compiled(self) -> bool:
        return self.status == COMPILED

    def summary(self) -> str:
        if not self.compiled:
            how = "through the reference interpreter" if self.status == INTERPRETER else "as ATen"
            return f"tessera: {self.kind} graph runs {how} (not compiled): {self.reason}"
        parts = [f"{self.kernels} tessera kernels"]
        if self.conv_kernels:
            parts.append(f"{self.conv_kernels} tessera conv kernels")
        if self.library:
            parts.append("library " + ", ".join(f"{k} x{n}" for k, n in sorted(self.library.items())))
        if self.views:
            parts.append("views " + ", ".join(f"{k} x{n}" for k, n in sorted(self.views.items())))
        source = f" (from the {self.cached} graph cache)" if self.cached else ""
        sizes = " for dynamic sizes" if self.dynamic else " for one size class" if self.size_class else ""
        text = f"tessera: {self.kind} graph compiled{sizes}{source}: " + ", ".join(parts)
        if self.aten_ops:
            text += "; ATen: " + ", ".join(f"{k} x{n}" for k, n in sorted(self.aten_ops.items()))
        return text


_collectors: list[list[GraphReport]] = []


@contextlib.contextmanager
def collect_reports() -> Iterator[list[GraphReport]]:
    """The reports of every graph compiled inside the ``with`` block, in order."""
    reports: list[GraphReport] = []
    _collectors.append(reports)
    try:
        yield reports
    finally:
        _collectors.remove(reports)


def publish(report: GraphReport, echo: bool = False) -> None:
    """Hand ``report`` to the collectors and the log (and stderr with ``echo``)."""
    for reports in _collectors:
        reports.append(report)
    level = logging.INFO if report.compiled else logging.WARNING
    log.log(level, "%s", report.summary())
    if echo:
        print(report.summary(), file=sys.stderr)
