"""Expected failures of ``test_op_db.py``: ``(op name, kind) -> reason``, kind
one of ``float32``, ``half``, ``backward`` or ``*``. Only crashes may be listed
(a wrong result is never expected), each with its cause; the tests are
``xfail(strict=True)``, so an entry whose op now passes fails the run and is
removed: the list only shrinks."""

from __future__ import annotations

EXPECTED: dict[tuple[str, str], str] = {}
