# The two commands of the README: `make demo` and `make test`.
.PHONY: setup demo test lit pytest

setup:
	./scripts/setup.sh

demo: setup
	.venv/bin/python bench/demo.py

lit: setup
	.venv/bin/lit -sv test/lit

pytest: setup
	.venv/bin/python -m pytest test/py -q

test: setup
	.venv/bin/lit -sv test/lit
	.venv/bin/python -m pytest test/py -q
