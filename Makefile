.PHONY: install test lint type bench

install:
	pip install -e '.[dev]'

test:
	pytest

lint:
	ruff check langmem_tiers tests benchmarks graphs scripts notebooks
	ruff format --check langmem_tiers tests benchmarks graphs scripts notebooks

type:
	mypy

bench:
	python -m benchmarks all
