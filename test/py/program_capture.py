"""The tessera programs a compiled callable runs, for tests that look at their steps.

    programs = programs_run(compiled, x)     # calls compiled(x) once
    [s for p in programs for s in p.steps if isinstance(s, Launch)]
"""

from __future__ import annotations

from tessera.runtime.program import Program


def programs_run(compiled, *args) -> list[Program]:
    """Every :class:`Program` that one call ``compiled(*args)`` runs, in order."""
    seen = []
    original = Program.run

    def run(self, *tensors, **kw):
        seen.append(self)
        return original(self, *tensors, **kw)

    Program.run = run
    try:
        compiled(*args)
    finally:
        Program.run = original
    return seen
