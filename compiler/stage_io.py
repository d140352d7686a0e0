"""What flows between the stages of the driver (``stages.py``): one options
object in, outputs out.

    CompileOptions(target="x86", features="+avx2,+fma", freezing=True)
    StageOutput(value=module, text=print_module(module), suffix="mlir")
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class CompileOptions:
    """Everything that decides what tessera builds for a graph, resolved once per
    graph (``BackendOptions.compile_options``) and read by every stage: frozen and
    hashable. The code of a kernel depends only on ``target`` and ``features``: the
    compile cache keys an artifact by them (``build.cached_artifact``)."""

    target: str
    features: str | None = None
    """The CPU features (``+avx2,+fma``) or GPU sm to build for; ``None``: this host's CPU
    (read once, by the target's code generator), the GPU target's default sm."""
    freezing: bool = False
    """As ``torch.compile``'s option: fold what depends on weights alone at compile time."""
    conv_kernels: bool = True
    """Convs on the target's own conv kernels where its model prefers them (``False``: the library)."""
    disable: tuple[str, ...] = field(default=())
    """Graph or fusion passes left out, by name."""

    @classmethod
    def of(cls, target: str | CompileOptions, **fields: Any) -> CompileOptions:
        """``target`` if it is options already, else options for that target name."""
        return target if isinstance(target, CompileOptions) else cls(target, **fields)


@dataclass
class StageOutput:
    """What a stage produced: the object later stages take, its text form, the
    file suffix of a dump, and the bytes of a binary artifact when there is one."""

    value: Any
    text: str
    suffix: str
    data: bytes | None = None
