# Conveniences over the scripts in build/ (the README's commands work without make).
.PHONY: setup run test lint bench llama-server package
setup:
	bash build/setup.sh
run:
	bash build/run.sh
test:
	bash build/test.sh
lint:
	.venv/bin/ruff check .
package:
	bash build/package.sh
llama-server:
	bash build/llama_server.sh
bench:
	.venv/bin/python tests/bench/bench_character.py
	.venv/bin/python tests/bench/bench_link.py
	.venv/bin/python tests/bench/bench_scale.py
	.venv/bin/python tests/bench/bench_desktop.py
	.venv/bin/python tests/bench/bench_bundle.py
	.venv/bin/python tests/bench/voice_latency.py
	.venv/bin/python tests/bench/wake_rates.py
	.venv/bin/python tests/bench/compare_models.py
