# The two commands of the README: `make demo` and `make test` (which lints first).
.PHONY: setup demo test lit pytest lint

# mypy covers the registry with every target's folder, the driver, the host program and the
# runtime (typed clean); the rest of the tree is ruff-clean and joins mypy's list as it is typed.
TYPED = compiler/targets/ compiler/stage_io.py compiler/build.py compiler/placements.py compiler/stages.py \
	compiler/translate.py compiler/backend.py compiler/host_program.py compiler/library_calls.py compiler/cli.py \
	compiler/lazy_exports.py compiler/size_specialization.py compiler/graph_cache.py compiler/codegen/fingerprint.py passes/target_models.py passes/select_impl.py passes/fuse_conv_residuals.py \
	passes/fold_relayouts_into_convs.py passes/target_pass.py compiler/host_steps.py compiler/host_plan.py \
	compiler/conv_epilogue.py compiler/exported.py dialects/polyphase.py dialects/dim_orders.py runtime/

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
