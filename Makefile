# The two commands of the README: `make demo` and `make test` (which lints first).
.PHONY: setup demo test lit pytest lint

# mypy covers the registry, the driver and the runtime (typed clean); the rest of the tree
# is ruff-clean and joins mypy's list as it is typed.
TYPED = compiler/targets/__init__.py compiler/targets/base.py compiler/targets/llvm_stages.py \
	compiler/targets/*/__init__.py compiler/targets/*/codegen.py compiler/targets/*/conv_layouts.py \
	compiler/stage_io.py compiler/build.py compiler/placements.py compiler/stages.py compiler/translate.py \
	passes/target_models.py runtime/

setup:
	./scripts/setup.sh

demo: setup
	.venv/bin/python bench/demo.py

lint: setup
	.venv/bin/ruff check compiler dialects passes runtime test/py/test_layering.py test/py/test_aarch64.py
	.venv/bin/mypy $(TYPED)

lit: setup
	.venv/bin/lit -sv test/lit

pytest: setup
	.venv/bin/python -m pytest test/py -q

test: setup lint
	.venv/bin/lit -sv test/lit
	.venv/bin/python -m pytest test/py -q
