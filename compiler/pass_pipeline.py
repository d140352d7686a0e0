"""Pass pipelines from text: ``cse,dce`` or ``assign-layouts{target=x86},cse``
(the syntax of ``mlir-opt -p`` / ``xdsl-opt -p``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from . import targets  # noqa: F401 - registers each target's models with the passes (passes.target_models)
from .errors import UnknownPassError

if TYPE_CHECKING:
    from xdsl.passes import PassPipeline, PassPipelineCallbackType


def build_pipeline(spec: str | Sequence[str], callback: PassPipelineCallbackType | None = None) -> PassPipeline:
    """A pipeline from a pass list; raises :class:`UnknownPassError` for names not registered."""
    from xdsl.passes import PassPipeline
    from xdsl.utils.arg_spec import parse_pipeline
    from xdsl.utils.exceptions import ArgSpecParseError

    from tessera.passes import PASSES

    text = spec if isinstance(spec, str) else ",".join(spec)
    try:
        specs = list(parse_pipeline(text))
    except (ArgSpecParseError, ValueError) as e:  # ArgSpecParseError is a BaseException
        detail = " ".join(str(e).split())
        raise UnknownPassError(f"malformed pass pipeline '{text}': {detail}") from None
    for s in specs:
        if s.name not in PASSES:
            raise UnknownPassError(
                f"unknown pass '{s.name}'; registered passes: {', '.join(sorted(PASSES))}"
            )
    try:
        passes = tuple(PASSES[s.name].from_pass_spec(s) for s in specs)
    except Exception as e:  # noqa: BLE001 - bad option names or values: whatever the pass raises
        raise UnknownPassError(f"bad pass options in '{text}': {e}") from None
    return PassPipeline(passes, callback)


def pass_name(spec: str) -> str:
    """The pass a pipeline entry names: ``assign-layouts{target=x86}`` -> ``assign-layouts``."""
    return spec.split("{", 1)[0]


def without(pipeline: Sequence[str], names: Sequence[str]) -> tuple[str, ...]:
    """``pipeline`` with the entries of the passes ``names`` left out (options or not)."""
    return tuple(p for p in pipeline if pass_name(p) not in names)


def target_pipeline(target: str) -> tuple[str, ...]:
    """The graph pipeline of ``target`` (between the ``graph`` and ``graph-opt`` stages)."""
    from .codegen.errors import UnknownTarget

    try:
        return targets.get(target).graph_pipeline()
    except UnknownTarget:
        raise UnknownPassError(f"no pipeline for target '{target}'; targets: {', '.join(targets.names())}") from None
