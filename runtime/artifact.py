"""A compiled artifact: machine code (or PTX, metallib...) plus the signatures
of the kernels inside it, serializable to bytes for the compile cache.

    Artifact(target="x86", kind="obj", data=b"\\x7fELF...", signatures=(KernelSignature(...),),
             target_key="x86|x86_64-unknown-linux-gnu|znver3|+avx2,+fma,...|None")
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass

from tessera.runtime.signature import KernelSignature

_MAGIC = b"TSRA1\n"


@dataclass(frozen=True)
class Artifact:
    target: str
    """The name of the target that built it (the runtime only reports it)."""
    kind: str
    """``obj``, ``ptx``, ``cubin``, ``msl`` (Metal source, ASCII), ``metallib``."""
    data: bytes
    signatures: tuple[KernelSignature, ...]
    target_key: str = ""
    """``name|triple|cpu|features|...``: what the code requires of the machine."""

    @property
    def triple(self) -> str:
        """The LLVM triple the code was built for ("" when not recorded)."""
        parts = self.target_key.split("|")
        return parts[1] if len(parts) > 1 else ""

    def signature(self, name: str) -> KernelSignature | None:
        return next((s for s in self.signatures if s.name == name), None)

    @property
    def required_features(self) -> tuple[str, ...]:
        """CPU features the code was built with (``+avx2`` -> ``avx2``)."""
        parts = self.target_key.split("|")
        feats = parts[3] if len(parts) > 3 else ""
        return tuple(f[1:] for f in feats.split(",") if f.startswith("+"))

    def to_bytes(self) -> bytes:
        header = json.dumps({
            "target": self.target, "kind": self.kind, "target_key": self.target_key,
            "signatures": [s.to_json() for s in self.signatures],
        }).encode()
        return _MAGIC + struct.pack("<Q", len(header)) + header + self.data

    @classmethod
    def from_bytes(cls, blob: bytes) -> Artifact:
        """Raises ``ValueError`` on anything malformed."""
        if not blob.startswith(_MAGIC) or len(blob) < len(_MAGIC) + 8:
            raise ValueError("not a tessera artifact")
        (n,) = struct.unpack_from("<Q", blob, len(_MAGIC))
        start = len(_MAGIC) + 8
        if start + n > len(blob):
            raise ValueError("truncated artifact header")
        try:
            h = json.loads(blob[start:start + n])
            sigs = tuple(KernelSignature.from_json(s) for s in h["signatures"])
            return cls(h["target"], h["kind"], blob[start + n:], sigs, h.get("target_key", ""))
        except (KeyError, TypeError, json.JSONDecodeError, UnicodeDecodeError) as err:
            raise ValueError(f"malformed artifact header: {err}") from None
