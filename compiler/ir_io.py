"""Reading, verifying and printing IR, with file:line:col on every failure.

Parsed ops carry ``loc("file":line:col)`` of their text, as MLIR's do, so a
verifier failure points at the op's line:

    bad.mlir:4:8: error: 'tsr.relayout' op result has shape [8, 1], expected [1, 8]
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from dataclasses import dataclass

from xdsl.dialects.builtin import FileLineColLoc, IntAttr, ModuleOp, StringAttr
from xdsl.ir import Block, Operation, SSAValue
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import IsolatedFromAbove
from xdsl.utils.exceptions import DiagnosticException
from xdsl.utils.exceptions import ParseError as XdslParseError
from xdsl.utils.mlir_lexer import MLIRLexer

from tessera.dialects.tsr.shapes import check_tensor_layout

from .context import make_context
from .errors import Location, ParseError, VerificationError

SPLIT_MARKER = re.compile(r"^// -----[^\S\n]*$", re.MULTILINE)  # not \s*: it would eat the blank line after

# xDSL's string-literal regex nests ``+`` in ``*``: an unclosed ``"`` backtracks
# in time exponential in the rest of its line (30 characters: 25 s). The same
# language, one character per step: linear.
MLIRLexer._unescaped_characters_regex = re.compile(r'"(?:[^"\\\n\v\f]|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*"')


class _LocatingParser(Parser):
    """An xDSL parser that stamps each op with the location of its text."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        # Where each op being parsed starts, innermost last. An op whose parse
        # raises stays on the stack: a constraint failure reports its location.
        self.op_starts: list = []

    def parse_operation(self) -> Operation:
        loc = self._current_token.span.get_location()
        self.op_starts.append(loc)
        op = super().parse_operation()
        self.op_starts.pop()
        if not isinstance(op.location, FileLineColLoc):
            op.location = FileLineColLoc(StringAttr(loc.file), IntAttr(loc.line), IntAttr(loc.col))
        return op


@dataclass(frozen=True)
class Chunk:
    """A piece of an input file (``--split-input-file``), with its first line."""

    text: str
    first_line: int


def split_input(text: str, split: bool) -> list[Chunk]:
    if not split:
        return [Chunk(text, 1)]
    chunks, line, pos = [], 1, 0
    for m in SPLIT_MARKER.finditer(text):
        piece = text[pos : m.start()]
        chunks.append(Chunk(piece, line))
        line += piece.count("\n") + 1
        pos = m.end() + 1
    chunks.append(Chunk(text[pos:], line))
    return chunks


def decode_source(data: bytes, filename: str) -> str:
    """The text of an input file: UTF-8, a leading byte-order mark dropped;
    a byte that is not UTF-8, or a NUL, is a located :class:`ParseError`."""
    data = data.removeprefix(b"\xef\xbb\xbf")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ParseError(f"invalid UTF-8 byte 0x{data[e.start]:02x}", _location_at(data, e.start, filename)) from None
    nul = data.find(b"\0")
    if nul >= 0:
        raise ParseError("NUL byte in the input", _location_at(data, nul, filename))
    return text


def _location_at(data: bytes, offset: int, filename: str) -> Location:
    line = data.count(b"\n", 0, offset) + 1
    col = offset - (data.rfind(b"\n", 0, offset) + 1) + 1
    return Location(filename, line, col)


def parse_module(text: str, filename: str = "<stdin>", first_line: int = 1) -> ModuleOp:
    """Parse IR text; raise :class:`ParseError` with the position on failure.
    Empty text is an empty module (as in ``mlir-opt``)."""
    if not text.strip():
        return ModuleOp([])
    _check_bitwidths(text, filename, first_line)
    padded = "\n" * (first_line - 1) + text
    parser = None
    try:
        parser = _LocatingParser(make_context(), padded, filename)  # lexes the first token: may fail
        module = parser.parse_module()
    except XdslParseError as e:
        loc = e.span.get_location()
        raise ParseError(e.msg, Location(loc.file, loc.line, loc.col)) from None
    except RecursionError:
        loc = parser.op_starts[-1] if parser and parser.op_starts else None
        where = Location(loc.file, loc.line, loc.col) if loc else Location(filename, first_line, 1)
        raise ParseError("the input nests too deeply to parse", where) from None
    except MemoryError:
        raise ParseError("the input is too large to parse", Location(filename)) from None
    except Exception as e:  # noqa: BLE001 - whatever the text makes xDSL raise is about the text
        # Attribute verifiers and the op constraints of declarative formats
        # run while parsing and raise plain exceptions (ValueError, a bitwidth
        # xDSL cannot pack: NotImplementedError, ...): point at the op.
        if parser is None:
            raise ParseError(_first_line(e), Location(filename, first_line, 1)) from None
        loc = parser.op_starts[-1] if parser.op_starts else parser._current_token.span.get_location()
        raise ParseError(_first_line(e), Location(loc.file, loc.line, loc.col)) from None
    return module


MAX_BITWIDTH = 16777215
"""MLIR's limit on an integer type's width."""
_INT_TYPE = re.compile(r"\b[su]?i(\d{8,})\b")


def _check_bitwidths(text: str, filename: str, first_line: int) -> None:
    """Refuse an integer type wider than MLIR allows before xDSL parses it:
    its value range (``2**width``) would take gigabytes and minutes."""
    for m in _INT_TYPE.finditer(text):
        if int(m.group(1)) > MAX_BITWIDTH:
            line = text.count("\n", 0, m.start())
            col = m.start() - (text.rfind("\n", 0, m.start()) + 1) + 1
            raise ParseError(f"integer bitwidth is limited to {MAX_BITWIDTH} bits",
                             Location(filename, first_line + line, col))


def op_location(op: Operation) -> Location | None:
    loc = op.location
    if isinstance(loc, FileLineColLoc):
        return Location(loc.filename.data, loc.line.data, loc.column.data)
    return None


def iter_verification_errors(module: ModuleOp) -> Iterator[VerificationError]:
    """Every op that fails its verifier, in program order (nested ops first),
    then every use of a value its definition does not dominate."""
    yield from _verifier_errors(module)
    yield from _dominance_errors(module.body.block, set())


def _dominance_errors(block: Block, visible: set[SSAValue]) -> Iterator[VerificationError]:
    """Uses in ``block`` (and the single-block regions inside it) of values not
    defined before them: ``visible`` holds what enclosing blocks defined
    before the op whose region this is (nothing for an isolated region)."""
    defined = set(visible) | set(block.args)
    for op in block.ops:
        for i, v in enumerate(op.operands):
            if v not in defined:
                yield VerificationError(f"'{op.name}' op operand #{i} does not dominate this use", op_location(op))
        inner = set() if op.has_trait(IsolatedFromAbove) else defined
        for region in op.regions:
            if len(region.blocks) == 1:  # a CFG region's dominance is its own
                yield from _dominance_errors(region.block, inner)
        defined.update(op.results)


def _verifier_errors(module: ModuleOp) -> Iterator[VerificationError]:
    for op in module.walk():
        try:
            op.verify(verify_nested_ops=False)
            for region in op.regions:
                for block in region.blocks:
                    for arg in block.args:
                        check_tensor_layout(arg.type, f"block argument #{arg.index}")
        except (DiagnosticException, ValueError) as e:
            yield VerificationError(f"'{op.name}' op {_first_line(e)}", op_location(op))


def verify_module(module: ModuleOp) -> None:
    """Raise the first :class:`VerificationError` of ``module``, if any."""
    for err in iter_verification_errors(module):
        raise err


def print_module(module: Operation, generic: bool = False, debuginfo: bool = False) -> str:
    out = io.StringIO()
    Printer(stream=out, print_generic_format=generic, print_debuginfo=debuginfo).print_op(module)
    return out.getvalue() + "\n"


def _first_line(e: Exception) -> str:
    msg = str(e.args[0]) if e.args else str(e)
    msg = msg.removeprefix("Operation does not verify: ")
    return msg.splitlines()[0] if msg else type(e).__name__
