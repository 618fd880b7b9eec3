# The two set-up commands: `make run` and `make test`. Each installs what it needs (idempotently).
CARGO ?= cargo

.PHONY: run test bench build deps doctor fuzz

deps:
	@scripts/ensure-chromium.sh
	@scripts/ensure-desktop.sh
	@scripts/ensure-sandbox.sh
	@scripts/ensure-vm.sh

build:
	$(CARGO) build --release -p glovebox -p vm

## run: check the set-up, then serve MCP on http://127.0.0.1:7777/mcp (prints a ready-to-paste
## client config and how a person approves). Stop with Ctrl-C.
run: deps build
	./target/release/glovebox doctor
	./target/release/glovebox serve

## test: formatting, clippy (warnings denied), the seam's absences (scripts/check-seam.sh), then
## the whole suite against real Chromium and loopback fixtures (what CI runs).
test: deps
	@scripts/ensure-python-mcp.sh >/dev/null
	@scripts/ensure-python-osworld.sh >/dev/null
	@scripts/ensure-test-libs.sh
	@scripts/ensure-postgres.sh
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets --locked -- -D warnings
	@scripts/check-seam.sh
	$(CARGO) test --workspace --locked

## bench: the figures the issues ask for; not part of `make test`.
bench: deps build
	@scripts/ensure-test-libs.sh
	./target/release/glovebox bench cdp
	./target/release/glovebox bench protocol
	./target/release/glovebox bench observe
	./target/release/glovebox bench act
	./target/release/glovebox bench runtime
	./target/release/glovebox bench sessions
	./target/release/glovebox bench store
	./target/release/glovebox bench restore
	./target/release/glovebox bench host
	./target/release/glovebox bench console
	./target/release/glovebox bench agent
	./target/release/glovebox bench desktop
	./target/release/glovebox bench vm
	python3 scripts/bench_mcp.py
	python3 scripts/bench_peers.py

## fuzz: a seeded MCP fuzzer over stdio and HTTP, four sessions at once, for SECONDS (default 60)
## from SEED (default 1); prints calls, unanswered requests, stalls and crashes. Not in `make test`.
## SESSIONS=N (environment) changes the number of sessions; BY_KIND=1 prints time per kind of call.
SECONDS ?= 60
SEED ?= 1
fuzz: deps build
	SECONDS_TO_RUN=$(SECONDS) SEED=$(SEED) python3 scripts/fuzz_mcp.py

doctor: deps build
	./target/release/glovebox doctor
