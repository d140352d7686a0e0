"""``compilerctl``: tessera's command-line driver.

    compilerctl import MODEL.py                      # the tsr IR of a model
    compilerctl dump MODEL.py --target x86 --all-stages -o out/
    compilerctl dump graph.mlir --target x86 --stage kernel    # from tsr IR
    compilerctl opt FILE.mlir -p cse,dce --print-ir-after-all
    compilerctl translate kernels.mlir --target ptx --emit ptx
    compilerctl passes [--pipeline x86]
    compilerctl targets

Errors are diagnostics (``file:line:col: error: ...``) and exit status 1.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .errors import Location, TesseraError

EXIT_ERROR = 1
FEATURES_HELP = ("what to generate code for: x86: CPU features, e.g. +avx512f,+avx512vnni (default: this host's); "
                 "ptx: the GPU, sm_80 (default) or sm_90, optionally with PTX features, e.g. sm_90,+ptx80")


def _read_input(path: str) -> tuple[str, str]:
    from .ir_io import decode_source

    if path == "-":
        return decode_source(sys.stdin.buffer.read(), "<stdin>"), "<stdin>"
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise TesseraError(f"cannot read input: {e.strerror}", Location(path)) from None
    return decode_source(data, path), path


def cmd_opt(args: argparse.Namespace) -> int:
    from xdsl.passes import ModulePass

    from .context import make_context
    from .ir_io import iter_verification_errors, parse_module, print_module, split_input
    from .pass_pipeline import build_pipeline, target_pipeline
    from .verify_diagnostics import check, expectations

    if args.passes is not None:
        spec = args.passes
    else:
        spec = ",".join(target_pipeline(args.target)) if args.target else ""
    build_pipeline(spec)  # an unknown pass is an error before any input is read
    text, filename = _read_input(args.input)
    out: list[str] = []
    problems: list[str] = []
    failed = False
    for chunk in split_input(text, args.split_input_file):
        produced: list[TesseraError] = []
        module = None
        try:
            module = parse_module(chunk.text, filename, chunk.first_line)
            produced = list(iter_verification_errors(module))
            if not produced:

                def after(prev: ModulePass | None, mod, nxt: ModulePass | None) -> None:
                    if prev is not None and args.print_ir_after_all:
                        out.append(f"// -----// IR Dump After {prev.name} //----- //\n")
                        out.append(print_module(mod, args.generic))

                build_pipeline(spec, after).apply(make_context(), module)
                produced = list(iter_verification_errors(module))
        except TesseraError as e:
            produced = [e]
        if args.verify_diagnostics:
            problems += check(produced, expectations(chunk.text, chunk.first_line), filename)
        elif produced:
            for err in produced:
                print(err, file=sys.stderr)
            failed = True
            continue
        if not produced and module is not None:
            out.append(print_module(module, args.generic))
    sep = "// -----\n" if args.split_input_file else ""
    _write(sep.join(out) if not args.print_ir_after_all else "".join(out), args.output)
    for p in problems:
        print(p, file=sys.stderr)
    return EXIT_ERROR if failed or problems else 0


def _write(text: str | bytes, output: str | None) -> None:
    if output and output != "-":
        try:
            Path(output).write_bytes(text if isinstance(text, bytes) else text.encode())
        except OSError as e:
            raise TesseraError(f"cannot write output: {e.strerror}", Location(output)) from None
    elif isinstance(text, bytes):
        sys.stdout.buffer.write(text)
    else:
        sys.stdout.write(text)


def _capture_model(path: str, training: bool):
    from .capture import capture
    from .model_loader import load_example

    fn, example_args = load_example(path)
    try:
        graphs = capture(fn, example_args, training=training)
    except Exception as e:  # noqa: BLE001 - Dynamo/AOTAutograd failing on the user's model
        msg = str(e).strip().splitlines()[0] if str(e).strip() else ""
        raise TesseraError(f"capturing the model's graphs failed: {type(e).__name__}: {msg}", Location(path)) from None
    named = [(f"forward{i or ''}", g) for i, g in enumerate(graphs.forward)]
    named += [(f"backward{i or ''}", g) for i, g in enumerate(graphs.backward)]
    if not named:
        raise TesseraError("the model produced no graph to compile", None)
    return named


def cmd_import(args: argparse.Namespace) -> int:
    from .fx_import import import_graph
    from .ir_io import print_module, verify_module

    for name, gm in _capture_model(args.model, args.training):
        result = import_graph(gm, name if name.startswith("backward") else "forward")
        verify_module(result.module)
        if result.fallbacks:
            kept = ", ".join(f"{n} x{c}" for n, c in sorted(result.fallbacks.items()))
            print(f"compilerctl: {name}: kept as ATen calls: {kept}", file=sys.stderr)
        print(f"// {name}")
        sys.stdout.write(print_module(result.module, args.generic, args.debuginfo))
    return 0


def cmd_dump(args: argparse.Namespace) -> int:
    from . import targets
    from .stage_io import CompileOptions
    from .stages import run_stages

    upto = args.stage or targets.get(args.target).default_stage
    outdir = Path(args.output) if args.output else None
    if outdir:
        try:
            outdir.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise TesseraError(f"cannot create the output folder: {e.strerror or e}", Location(args.output)) from None
    for name, start, start_at in _dump_inputs(args):
        options = CompileOptions(args.target, args.features, args.freezing)
        outputs = run_stages(start, options, None if args.all_stages else upto, start_at)
        shown = outputs if args.all_stages else {upto: outputs[upto]}
        for stage, so in shown.items():
            if outdir:
                _write(so.data if so.data is not None else so.text, str(outdir / f"{name}.{stage}.{so.suffix}"))
            else:
                print(f"// ===== {name}: stage {stage} ({args.target}) =====")
                sys.stdout.write(so.text if so.text.endswith("\n") else so.text + "\n")
    if outdir:
        print(f"compilerctl: wrote {', '.join(sorted(p.name for p in outdir.iterdir()))}", file=sys.stderr)
    return 0


def _dump_inputs(args: argparse.Namespace):
    """What ``dump`` compiles: each graph of a model (from its FX graph), or a
    ``graph``-stage IR file (``.mlir``: from the stage after ``graph``)."""
    if not args.model.endswith(".mlir"):
        return [(name, gm, "fx") for name, gm in _capture_model(args.model, args.training)]
    from .ir_io import parse_module, verify_module

    text, filename = _read_input(args.model)
    module = parse_module(text, filename)
    verify_module(module)
    return [("forward", module, "graph")]


def cmd_translate(args: argparse.Namespace) -> int:
    from .translate import translate

    text, filename = _read_input(args.input)
    _write(translate(text, filename, args.target, args.emit, args.features), args.output)
    return 0


def cmd_passes(args: argparse.Namespace) -> int:
    from tessera.passes import PASSES

    from .pass_pipeline import target_pipeline

    if args.pipeline:
        print(",".join(target_pipeline(args.pipeline)))
        return 0
    for name, cls in sorted(PASSES.items()):
        doc = (sys.modules[cls.__module__].__doc__ or "").strip().splitlines()
        summary = doc[0] if doc else ""
        print(f"{name:24} {summary}")
    return 0


def cmd_targets(args: argparse.Namespace) -> int:
    from . import targets
    from .stages import stage_names

    print(f"{'target':8} {'build':6} {'run':6} toolchain / device")
    for target in targets.all_targets():
        t = target.status()
        print(f"{t.target:8} {'yes' if t.can_build else 'no':6} {'yes' if t.can_run else 'no':6} {t.toolchain}; {t.run_note}")
    for target in targets.all_targets():
        print(f"// {target.name} stages: {', '.join(stage_names(target.name))}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    from . import targets

    TARGETS = targets.names()
    default = targets.host_cpu().name
    p = argparse.ArgumentParser(prog="compilerctl", description="tessera compiler driver")
    p.add_argument("--traceback", action="store_true", help="show Python tracebacks of internal errors")
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("import", help="print the tsr IR of MODEL.py's example()")
    s.add_argument("model")
    s.add_argument("--training", action="store_true", help="also import the backward graph")
    s.add_argument("--generic", action="store_true", help="print the generic op form")
    s.add_argument("--debuginfo", action="store_true", help="print each op's source location")
    s.set_defaults(func=cmd_import)

    s = sub.add_parser("dump", help="print or write the output of each compilation stage")
    s.add_argument("model", help="MODEL.py (its example()'s graphs), or a graph-stage .mlir file")
    s.add_argument("--target", choices=TARGETS, default=default)
    g = s.add_mutually_exclusive_group()
    g.add_argument("--stage", help="the stage to print (default: asm on x86, else the last implemented)")
    g.add_argument("--all-stages", action="store_true")
    s.add_argument("--freezing", action="store_true",
                   help="the pipeline of torch.compile's freezing=True (BatchNorm folded into the conv)")
    s.add_argument("-o", "--output", help="write one file per graph and stage into this folder")
    s.add_argument("--training", action="store_true")
    s.add_argument("--features", help=FEATURES_HELP)
    s.set_defaults(func=cmd_dump)

    s = sub.add_parser("opt", help="run passes on an IR file, like mlir-opt")
    s.add_argument("input", help="an .mlir file, or - for stdin")
    s.add_argument("-p", "--passes", help="comma-separated passes, e.g. cse,dce")
    s.add_argument("--target", choices=TARGETS, help="run this target's default pipeline (without -p)")
    s.add_argument("--print-ir-after-all", action="store_true")
    s.add_argument("--generic", action="store_true")
    s.add_argument("--split-input-file", action="store_true")
    s.add_argument("--verify-diagnostics", action="store_true")
    s.add_argument("-o", "--output")
    s.set_defaults(func=cmd_opt)

    from .translate import emit_kinds

    s = sub.add_parser("translate", help="a kernels module (the kernel stage) to LLVM IR, assembly, PTX, ...")
    s.add_argument("input", help="an .mlir file of tsr.kernel functions (or a kernel-stage dump), or - for stdin")
    s.add_argument("--target", choices=TARGETS, default=default)
    s.add_argument("--emit", choices=emit_kinds(), required=True)
    s.add_argument("--features", help=FEATURES_HELP)
    s.add_argument("-o", "--output", help="output file (binary emits are written as bytes)")
    s.set_defaults(func=cmd_translate)

    s = sub.add_parser("passes", help="list the registered passes")
    s.add_argument("--pipeline", choices=TARGETS, help="print the default pipeline of a target")
    s.set_defaults(func=cmd_passes)

    s = sub.add_parser("targets", help="what this host can build and run")
    s.set_defaults(func=cmd_targets)
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    from tessera.runtime.errors import TesseraRuntimeError

    try:
        return args.func(args)
    except (TesseraError, TesseraRuntimeError) as e:
        print(e, file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # noqa: BLE001 - an internal error is reported, not dumped
        if args.traceback:
            raise
        print(f"compilerctl: internal error: {type(e).__name__}: {e} (rerun with --traceback)", file=sys.stderr)
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
