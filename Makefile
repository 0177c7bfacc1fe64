# rigops: `make run` starts the bot (Slack when .env has tokens, else the console on this machine);
# `make test` installs what the tests need and runs them all.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)
DEMO   := examples/demo/rigops.toml

.PHONY: run test lint unit bench sshd clean

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

lint: $(STAMP)
	$(BIN)/ruff check bot tests bench
	$(BIN)/mypy --strict bot slackemu

unit: $(STAMP)
	$(BIN)/pytest -q -m "not ssh"

test: $(STAMP) sshd lint
	$(BIN)/pytest -q

bench: $(STAMP) sshd
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
