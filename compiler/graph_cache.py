"""The graph-level cache: the compiled program of an ATen graph, so that another
process (or, through the cache's remote tier, another machine) compiling the
same model skips import, passes, lowering and code generation.

    key = graph_key(gm, options)            # None: the graph reads what cannot be hashed
    store(cache, key, host, artifact, output_is_none)   # host: the kernel-stage host graph
    lookup(cache, key)                      # -> CompiledGraph | None

An entry holds the ``kernel`` stage's host graph as text and the artifact of
its fused kernels:

    %p = tsr.launch @fused_0(%x, %s) : (...) -> tensor<1x8x6x18x18xf32, #tsr.layout<ndhwc>>
    %y = tsr.conv %p, %w, %b {..., tsr.impl = "tessera"} : (...) -> ...
    + the ELF object (PTX, MSL) of @fused_0, ...

Loading one parses the host graph, loads the artifact and builds the host
program, as after a compile (the conv and int8 kernels a host call launches are
built from their spec through cache entries of their own).

The key is a sha256 of: the graph's code (and any nested graph's), every tensor
it reads by ``get_attr`` (dtype, shape, strides, bytes), each input's metadata
(shape, strides, dtype, device, ``requires_grad``), the :class:`CompileOptions`,
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
from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.fx
from xdsl.dialects.builtin import ModuleOp

from tessera.runtime.artifact import Artifact
from tessera.runtime.cache import CompileCache

from . import targets
from .codegen.fingerprint import tessera_fingerprint, tessera_version
from .ir_io import print_module
from .stage_io import CompileOptions

_MAGIC = b"TSRG1\n"

log = logging.getLogger("tessera.cache")


class Unhashable(Exception):
    """The graph reads an object the key cannot cover."""


def graph_key(gm: torch.fx.GraphModule, options: CompileOptions) -> str | None:
    """The cache key of ``gm`` compiled with ``options``, or None where the graph
    reads something the key cannot cover (then it is not cached)."""
    h = hashlib.sha256()

    def part(text: str | bytes) -> None:
        data = text.encode() if isinstance(text, str) else text
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)

    for text in (tessera_version(), tessera_fingerprint(), repr(options),
                 targets.get(options.target).cache_key(options.features)):
        part(text)
    try:
        _hash_graph(gm, part)
    except Exception:  # noqa: BLE001 - Unhashable, or a value that cannot be read (a meta tensor): not cached
        return None
    return h.hexdigest()


def _hash_graph(gm: torch.fx.GraphModule, part) -> None:
    part(gm.code)
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            part(_value_meta(node.meta.get("val", node.meta.get("example_value"))))
        elif node.op == "get_attr":
            value = _attr(gm, node.target)
            if isinstance(value, torch.fx.GraphModule):
                _hash_graph(value, part)
            elif isinstance(value, torch.Tensor):
                part(_value_meta(value))
                part(_tensor_bytes(value))
            else:
                raise Unhashable(f"get_attr {node.target}: {type(value).__name__}")


def _attr(gm: torch.nn.Module, target: str) -> object:
    value: object = gm
    for name in target.split("."):
        value = getattr(value, name)
    return value


def _value_meta(v: object) -> str:
    """An input's metadata as text: a tensor's shape, strides, dtype, device; a number's type and value."""
    if isinstance(v, torch.Tensor):
        if any(isinstance(s, torch.SymInt) for s in (*v.shape, *v.stride(), v.storage_offset())):
            raise Unhashable("symbolic sizes")
        return (f"tensor {tuple(v.shape)} {v.stride()} {v.storage_offset()} {v.dtype} {v.device} "
                f"{v.requires_grad} {v.layout}")
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
    """A graph's compiled program as stored: its host graph (``kernel`` stage, text),
    the artifact of its fused kernels (None: it launches none) and which of its
    outputs are None (the importer drops them)."""

    host: str
    artifact: Artifact | None
    output_is_none: tuple[bool, ...]

    def to_bytes(self) -> bytes:
        host = self.host.encode()
        artifact = self.artifact.to_bytes() if self.artifact is not None else b""
        header = json.dumps({"output_is_none": list(self.output_is_none), "host": len(host),
                             "artifact": len(artifact) if self.artifact is not None else None}).encode()
        return _MAGIC + struct.pack("<Q", len(header)) + header + host + artifact

    @classmethod
    def from_bytes(cls, blob: bytes) -> CompiledGraph:
        """Raises ``ValueError`` on anything malformed."""
        if not blob.startswith(_MAGIC) or len(blob) < len(_MAGIC) + 8:
            raise ValueError("not a compiled graph")
        (n,) = struct.unpack_from("<Q", blob, len(_MAGIC))
        start = len(_MAGIC) + 8
        try:
            h = json.loads(blob[start:start + n])
            host_end = start + n + int(h["host"])
            host = blob[start + n:host_end].decode()
            size = h["artifact"]
            if size is not None and host_end + int(size) != len(blob) or size is None and host_end != len(blob):
                raise ValueError("compiled graph of the wrong length")
            artifact = Artifact.from_bytes(blob[host_end:]) if size is not None else None
            return cls(host, artifact, tuple(bool(b) for b in h["output_is_none"]))
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


def store(cache: CompileCache, key: str, host: ModuleOp, artifact: Artifact | None,
          output_is_none: Sequence[bool]) -> None:
    """Stores the compiled graph (its host graph printed); a cache that cannot be
    written costs a warning (once), and nothing that goes wrong here reaches the
    program that compiled the graph."""
    try:
        entry = CompiledGraph(print_module(host), artifact, tuple(output_is_none))
        cache.put_bytes(key, entry.to_bytes())
    except Exception as e:  # noqa: BLE001 - the compiled program runs uncached
        log.warning("tessera: compiled graph %s... not cached (%s: %s)", key[:16], type(e).__name__, e)
