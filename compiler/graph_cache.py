"""The graph-level cache: the compiled program of an ATen graph, so that another
process (or, through the cache's remote tier, another machine) compiling the
same model skips import, passes, lowering and code generation.

    key = graph_key(gm, options)            # None: the graph reads what cannot be hashed
    store(cache, key, host, artifact, output_is_none)   # host: the kernel-stage host graph
    lookup(cache, key)                      # -> CompiledGraph | None

An entry holds the graph's host program (``host_plan.py``: its steps, pickled)
and the artifact of its fused kernels:

    Alloc(p, ndhwc); Launch(@fused_0, (x, s, p)); Call(OneDnnConv(...), (p, w, b), (y,)) ...
    + the ELF object (PTX, MSL) of @fused_0, ...

Loading one loads the artifact and the program, with no IR: a process with a
warm cache never imports xDSL (the conv and int8 kernels a step launches load
from their spec, through cache entries of their own). A program whose steps do
not pickle is stored as its ``kernel``-stage host graph, as text, and built
again from it on loading, as after a compile:

    %p = tsr.launch @fused_0(%x, %s) : (...) -> tensor<1x8x6x18x18xf32, #tsr.layout<ndhwc>>

The key is a sha256 of: the graph's code (and any nested graph's), every tensor
it reads by ``get_attr`` (dtype, shape, strides, bytes), each input's metadata
(shape, strides, dtype, device, ``requires_grad``; a symbolic size as its
expression, ``s0``, with each symbol's range and the guards on them, not the
sizes of the trace: a graph of dynamic sizes has one entry), the :class:`CompileOptions`,
the target's key (triple, CPU, features: the code's requirements), tessera's
version and the digest of all its sources and of the libraries it builds with
(``tessera_fingerprint``). A graph that reads any other object has no key and
is compiled each time.
"""

from __future__ import annotations

import hashlib
import json
import logging
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
import torch.fx

from tessera.runtime.artifact import Artifact
from tessera.runtime.cache import CompileCache
from tessera.runtime.module import Module

from . import targets
from .codegen.fingerprint import tessera_fingerprint, tessera_version
from .host_plan import dump_program, load_program
from .host_steps import HostProgram
from .stage_io import CompileOptions

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp

_MAGIC = b"TSRG2\n"

log = logging.getLogger("tessera.cache")


class Unhashable(Exception):
    """The graph reads an object the key cannot cover."""


def graph_key(gm: torch.fx.GraphModule, options: CompileOptions, free: frozenset[int] = frozenset()) -> str | None:
    """The cache key of ``gm`` compiled with ``options`` (``free``: the outputs it
    may return in any layout), or None where the graph reads something the key
    cannot cover (then it is not cached)."""
    h = hashlib.sha256()

    def part(text: str | bytes) -> None:
        data = text.encode() if isinstance(text, str) else text
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)

    for text in (tessera_version(), tessera_fingerprint(), repr(options),
                 targets.get(options.target).cache_key(options.features), repr(sorted(free))):
        part(text)
    try:
        _hash_graph(gm, part)
    except Exception:  # noqa: BLE001 - Unhashable, or a value that cannot be read (a meta tensor): not cached
        return None
    return h.hexdigest()


def _hash_graph(gm: torch.fx.GraphModule, part) -> None:
    part(gm.code)
    symbols: list[torch.SymInt] = []
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            part(_value_meta(node.meta.get("val", node.meta.get("example_value")), symbols))
        elif node.op == "get_attr":
            value = _attr(gm, node.target)
            if isinstance(value, torch.fx.GraphModule):
                _hash_graph(value, part)
            elif isinstance(value, torch.Tensor):
                part(_value_meta(value, symbols))
                part(_tensor_bytes(value))
            else:
                raise Unhashable(f"get_attr {node.target}: {type(value).__name__}")
    if symbols:
        part(_shape_facts(symbols))


def _shape_facts(symbols: Sequence[torch.SymInt]) -> str:
    """What the graph's compile may assume of its symbolic sizes: each size
    symbol's range and the guards on them (the program is built for every size
    they admit, never for the sizes of the trace: those are not part of the key).

        s0: [2, int_oo]; s1: [2, int_oo] | Eq(Mod(s1, 2), 0)
    """
    env = symbols[0].node.shape_env
    names = sorted({f for s in symbols for f in s.node.expr.free_symbols}, key=str)
    ranges = "; ".join(f"{n}: {env.var_to_range.get(n)}" for n in names)
    return ranges + " | " + " ".join(sorted(str(g.expr) for g in env.guards))


def _attr(gm: torch.nn.Module, target: str) -> object:
    value: object = gm
    for name in target.split("."):
        value = getattr(value, name)
    return value


def _value_meta(v: object, symbols: list[torch.SymInt]) -> str:
    """An input's metadata as text: a tensor's shape, strides, dtype, device; a
    number's type and value; a symbolic size as its expression (``s0``, ``2*s1``),
    collected in ``symbols``."""
    if isinstance(v, torch.Tensor):
        sizes = (*v.shape, *v.stride(), v.storage_offset())
        symbols.extend(s for s in sizes if isinstance(s, torch.SymInt))
        return (f"tensor {tuple(v.shape)} {v.stride()} {v.storage_offset()} {v.dtype} {v.device} "
                f"{v.requires_grad} {v.layout}")
    if isinstance(v, torch.SymInt):
        symbols.append(v)
        return f"symint {v}"
    if isinstance(v, (bool, int, float, type(None))):
        return f"{type(v).__name__} {v!r}"
    raise Unhashable(f"an input of type {type(v).__name__}")


def _tensor_bytes(t: torch.Tensor) -> bytes:
    if t.layout != torch.strided or t.is_quantized or type(t) not in (torch.Tensor, torch.nn.Parameter):
        raise Unhashable(f"a {type(t).__name__} constant")
    flat = t.detach().to("cpu").contiguous().reshape(-1)
    return flat.view(torch.uint8).numpy().tobytes() if flat.numel() else b""


@dataclass(frozen=True)
class CompiledGraph:
    """A graph's compiled program as stored: its host program (pickled,
    ``host_plan``) or, where that does not pickle, its host graph (``kernel``
    stage, text); the artifact of its fused kernels (None: it launches none); and
    which of its outputs are None (the importer drops them)."""

    program: bytes | None
    host: str | None
    artifact: Artifact | None
    output_is_none: tuple[bool, ...]

    def to_bytes(self) -> bytes:
        parts = {"program": self.program, "host": self.host.encode() if self.host is not None else None,
                 "artifact": self.artifact.to_bytes() if self.artifact is not None else None}
        header = json.dumps({"output_is_none": list(self.output_is_none),
                             **{k: len(v) if v is not None else None for k, v in parts.items()}}).encode()
        return _MAGIC + struct.pack("<Q", len(header)) + header + b"".join(v for v in parts.values() if v is not None)

    @classmethod
    def from_bytes(cls, blob: bytes) -> CompiledGraph:
        """Raises ``ValueError`` on anything malformed."""
        if not blob.startswith(_MAGIC) or len(blob) < len(_MAGIC) + 8:
            raise ValueError("not a compiled graph")
        (n,) = struct.unpack_from("<Q", blob, len(_MAGIC))
        pos = len(_MAGIC) + 8
        try:
            h = json.loads(blob[pos:pos + n])
            pos += n
            parts: dict[str, bytes | None] = {}
            for name in ("program", "host", "artifact"):
                size = h[name]
                parts[name] = None if size is None else blob[pos:pos + int(size)]
                pos += 0 if size is None else int(size)
            if pos != len(blob) or parts["program"] is None and parts["host"] is None:
                raise ValueError("compiled graph of the wrong length, or with no program")
            artifact = Artifact.from_bytes(parts["artifact"]) if parts["artifact"] is not None else None
            host = parts["host"].decode() if parts["host"] is not None else None
            return cls(parts["program"], host, artifact, tuple(bool(b) for b in h["output_is_none"]))
        except (KeyError, TypeError, json.JSONDecodeError, UnicodeDecodeError) as err:
            raise ValueError(f"malformed compiled graph: {err}") from None


def lookup(cache: CompileCache, key: str) -> CompiledGraph | None:
    """The entry stored under ``key`` (locally, else on the remote tier), or None."""
    payload = cache.get_bytes(key)
    if payload is None:
        return None
    try:
        return CompiledGraph.from_bytes(payload)
    except ValueError:
        return None


def program_of(entry: CompiledGraph, kernels: Module | None,
               build: Callable[[ModuleOp, Module | None], HostProgram]) -> HostProgram:
    """The host program of ``entry``, launching ``kernels`` (its artifact, loaded):
    unpickled, or built by ``build`` from its host graph where only that was stored."""
    if entry.program is not None:
        return load_program(entry.program, kernels)
    from .ir_io import parse_module

    return build(parse_module(entry.host or "", "<graph cache>"), kernels)


def store(cache: CompileCache, key: str, host_ir: ModuleOp, artifact: Artifact | None,
          output_is_none: Sequence[bool], program: HostProgram, kernels: Module | None) -> None:
    """Stores the compiled graph: its program pickled, or its host graph printed
    where the program does not pickle. A cache that cannot be written costs a
    warning (once), and nothing that goes wrong here reaches the program that
    compiled the graph."""
    try:
        try:
            entry = CompiledGraph(dump_program(program, kernels), None, artifact, tuple(output_is_none))
        except Exception as e:  # noqa: BLE001 - a step that does not pickle: stored as IR
            from .ir_io import print_module

            log.debug("tessera: program of %s... stored as IR (%s: %s)", key[:16], type(e).__name__, e)
            entry = CompiledGraph(None, print_module(host_ir), artifact, tuple(output_is_none))
        cache.put_bytes(key, entry.to_bytes())
    except Exception as e:  # noqa: BLE001 - the compiled program runs uncached
        log.warning("tessera: compiled graph %s... not cached (%s: %s)", key[:16], type(e).__name__, e)
