"""The layering of DESIGN.md, checked on the source: what each layer may import,
no import cycle among modules, and no target named outside the target registry.

    dialects  <-  passes  <-  compiler        runtime: neither IR nor compiler

Imports are read with ``ast`` (function-level ones included: a lazy import is
still a dependency), relative ones resolved against the module's package.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LAYERS = ("dialects", "passes", "compiler", "runtime")
ALLOWED = {
    "dialects": {"dialects"},
    "passes": {"dialects", "passes"},
    "compiler": {"dialects", "passes", "compiler", "runtime"},
    "runtime": {"runtime"},
}
TARGET_NAMES = {"x86", "aarch64", "ptx", "nvptx", "metal"}
REGISTRY = ROOT / "compiler" / "targets"


def _modules() -> dict[str, Path]:
    out = {}
    for layer in LAYERS:
        for path in sorted((ROOT / layer).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(("tessera", *parts[:-1])) if parts[-1] == "__init__" else ".".join(("tessera", *parts))
            out[name] = path
    return out


MODULES = _modules()


def _imports(name: str, path: Path, top_level_only: bool = False) -> set[str]:
    """The tessera modules ``name`` imports (``top_level_only``: those run at import time)."""
    tree = ast.parse(path.read_text(), str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    found: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.If) and top_level_only:
            continue  # `if TYPE_CHECKING:` blocks run no import
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("tessera.")}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            if not mod.startswith("tessera."):
                continue
            # `from pkg import sub` depends on the submodule (a package's __init__ runs first
            # on any import of its submodules: not counted as a dependency of its own)
            subs = {f"{mod}.{a.name}" for a in node.names if f"{mod}.{a.name}" in MODULES}
            found |= subs
            if len(subs) < len(node.names):
                found.add(mod)
    return found


def _layer(module: str) -> str:
    return module.split(".")[1]


@pytest.mark.parametrize("name", sorted(MODULES))
def test_layer_imports_only_what_it_may(name):
    layer = _layer(name)
    bad = sorted(m for m in _imports(name, MODULES[name]) if _layer(m) not in ALLOWED[layer])
    assert not bad, f"{name} ({layer}/) imports {bad}: {layer}/ may import only {sorted(ALLOWED[layer])}"


def test_no_import_cycle():
    graph = {n: {m for m in _imports(n, p, top_level_only=True) if m in MODULES and m != n}
             for n, p in MODULES.items()}
    # a package imports its own submodules (its __init__ lists them): not a cycle of two modules
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(n: str) -> None:
        state[n] = 1
        stack.append(n)
        for m in sorted(graph[n]):
            if state.get(m) == 1:
                cycle = stack[stack.index(m):] + [m]
                if not all(b.startswith(a + ".") or a.startswith(b + ".") for a, b in zip(cycle, cycle[1:])):
                    raise AssertionError("import cycle: " + " -> ".join(cycle))
            elif m not in state:
                visit(m)
        stack.pop()
        state[n] = 2

    for n in sorted(graph):
        if n not in state:
            visit(n)


def _strings(path: Path):
    """String constants of ``path`` that are not docstrings, nor an artifact kind
    compared with ``x.kind`` (the runtime loads ``ptx`` text, a kind, not a target), with their line."""
    tree = ast.parse(path.read_text(), str(path))
    skip = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    for n in ast.walk(tree):
        if isinstance(n, ast.Compare) and isinstance(n.left, ast.Attribute) and n.left.attr == "kind":
            skip |= {id(c) for c in ast.walk(n)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            yield node.lineno, node.value


def test_no_target_is_named_outside_the_registry():
    named = []
    for path in MODULES.values():
        if path.is_relative_to(REGISTRY):
            continue
        named += [f"{path.relative_to(ROOT)}:{line}: {value!r}" for line, value in _strings(path)
                  if value in TARGET_NAMES]
    assert not named, "target names outside compiler/targets:\n" + "\n".join(named)


def test_ir_tools_do_not_import_torch():
    """``compilerctl opt``/``translate`` start without torch (0.3 s, not 2+ s)."""
    import subprocess
    import sys

    code = ("import sys; from tessera.compiler.cli import main; "
            "main(['opt', '-', '-p', 'cse']); main(['passes']); "
            "print('torch' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], input="builtin.module {}\n", capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "False", "compilerctl opt imported torch"
