# rigops: `make run` starts the bot (Slack when .env has tokens, else the console on this machine);
# `make test` installs what the tests need and runs them all.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)
DEMO   := examples/demo/rigops.toml

.PHONY: run test lint unit bench sshd postgres ccache cuda clean

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]'
	@rm -f $(VENV)/.installed-*; touch $@

run: $(STAMP)
	@if [ -f .env ] && grep -Eq '^(export )?SLACK_BOT_TOKEN=.+' .env; then \
		exec $(BIN)/rigops run; \
	elif [ -n "$$RIGOPS_CONFIG" ] || [ -f rigops.toml ]; then \
		exec $(BIN)/rigops console; \
	else \
		echo "No Slack tokens in .env: starting the console on this machine with the demo build ($(DEMO))."; \
		exec $(BIN)/rigops --config $(DEMO) console; \
	fi

# Tests run a real OpenSSH server on 127.0.0.1; install it from Debian's packages when it is missing.
sshd:
	@if ! command -v sshd >/dev/null 2>&1 && [ ! -x /usr/sbin/sshd ]; then \
		echo "installing openssh-server"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openssh-server >/dev/null; \
	fi

# The state's tests on PostgreSQL start a real server from Debian's binaries (initdb, pg_ctl); install them when
# they are missing.
postgres:
	@if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && ! command -v initdb >/dev/null 2>&1; then \
		echo "installing postgresql"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null; \
	fi

# The compiler-cache tests put a real ccache in front of a real CMake build; install it when it is missing.
ccache:
	@if ! command -v ccache >/dev/null 2>&1; then \
		echo "installing ccache"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ccache >/dev/null || \
			echo "ccache could not be installed: its test is skipped"; \
	fi

lint: $(STAMP)
	$(BIN)/ruff check bot tests bench tools
	$(BIN)/mypy --strict bot slackemu

unit: $(STAMP)
	$(BIN)/pytest -q -m "not ssh and not postgres"

test: $(STAMP) sshd postgres ccache lint
	$(BIN)/pytest -q

bench: $(STAMP) sshd
	$(BIN)/python -m bench

# The CUDA example (examples/cuda): its build tools into the venv (scikit-build-core, ninja, cmake, as
# `pip install --no-build-isolation` needs them there), and the CUDA 13 wheels when this machine has no nvcc.
CUDA_WHEELS := nvidia-cuda-nvcc nvidia-nvvm nvidia-cuda-crt nvidia-cuda-runtime nvidia-cuda-cccl
cuda: $(STAMP)
	$(BIN)/python -m pip install -q scikit-build-core ninja cmake
	@if command -v nvcc >/dev/null 2>&1 || [ -n "$$CUDACXX" ]; then \
		echo "nvcc: $$(command -v nvcc || echo $$CUDACXX)"; \
	else \
		echo "no nvcc on this machine: installing the CUDA wheels into $(VENV)"; \
		$(BIN)/python -m pip install -q $(CUDA_WHEELS); \
	fi
	@echo "CUDA example: $(BIN)/rigops --config examples/cuda/rigops.toml console"

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
