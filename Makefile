# Beluga: `make run` starts standalone; `make test` runs the whole suite.
GO      ?= go
BIN     := bin/beluga
PKGS    := ./...
TESTFLAGS ?= -race -count=1 -timeout 30m

.PHONY: compose-secrets compose-images compose-test build run test fuzz test-short bench bench-failover soak lint fmt deps clean ui ui-deps ui-check ui-test

build:
	$(GO) build -o $(BIN) ./cmd/beluga

# run builds the UI first when Node is installed; without Node the
# committed bundle (api/ui/dist) is what the binary serves.
run:
	@if command -v npm >/dev/null 2>&1; then $(MAKE) ui || echo "the UI build failed: serving the committed UI bundle"; else echo "npm not found: serving the committed UI bundle"; fi
	$(MAKE) build
	./$(BIN) standalone $(ARGS)

# The web UI (web/: React, TypeScript, Vite). Its bundle is committed in
# api/ui/dist and embedded by go:embed, so go build needs no Node.
ui-deps:
	@node -e 'const [a,b]=process.versions.node.split(".").map(Number); if (a<20||(a===20&&b<19)) { console.error("the web UI build needs Node.js 20.19 or newer, found "+process.versions.node+" (a plain go build still serves the committed bundle)"); process.exit(1) }'
	cd web && npm ci --no-audit --no-fund

ui: ui-deps
	cd web && npx vite build

# ui-check fails when the committed bundle is not what web/ builds (the
# build is deterministic: names hashed from content, no timestamps).
UI_TMP := $(shell mktemp -u /tmp/beluga-ui.XXXXXX)
ui-check: ui-deps
	cd web && npx tsc --noEmit
	cd web && BELUGA_UI_OUT=$(UI_TMP) npx vite build --logLevel warn
	@diff -r $(UI_TMP) api/ui/dist >/dev/null || (echo "api/ui/dist is stale: run make ui and commit it"; diff -rq $(UI_TMP) api/ui/dist; rm -rf $(UI_TMP); exit 1)
	@rm -rf $(UI_TMP)
	@echo "api/ui/dist matches web/"

# Front-end unit tests (vitest).
ui-test: ui-deps
	cd web && npx vitest run

deps:
	./scripts/deps.sh

# The whole suite: unit, end-to-end on SQLite and MariaDB, cluster tests.
test: deps ui-check ui-test
	$(GO) vet $(PKGS)
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1)
	$(GO) test $(TESTFLAGS) $(PKGS)
	$(MAKE) fuzz

# Each fuzz target runs a fixed number of inputs beyond its seed corpus
# (a few seconds each here, the instrumented build cached). A count, not a
# duration: on a loaded machine a timed run can end while a worker is still
# on an input, which go test reports as "context deadline exceeded" (seen
# on FuzzSwitch). What it learns stays in Go's fuzz cache,
# $$(go env GOCACHE)/fuzz, outside the repository; an input that fails is
# written to the package's testdata/fuzz, to be committed with its fix.
FUZZTIME ?= 50000x
FUZZ     := FuzzDecode:./remote/frame FuzzHandshake:./remote FuzzParse:./common/spec FuzzResolve:./common/params FuzzSwitch:./tasks/switch

fuzz:
	@for t in $(FUZZ); do \
		echo "fuzz $${t%%:*} ($(FUZZTIME))"; \
		$(GO) test -run='^$$' -fuzz="^$${t%%:*}$$" -fuzztime=$(FUZZTIME) $${t#*:} || exit 1; \
	done

test-short:
	$(GO) test -short -count=1 $(PKGS)

# Benchmarks print figures (see README); they are not pass/fail tests.
# BENCHFLAGS=-scale adds the fan-out of 100,000 tasks (several minutes).
BENCHFLAGS ?=
bench: deps build
	$(GO) run ./bench -bin $(BIN) $(BENCHFLAGS)
	$(GO) run ./bench/control -bin $(BIN)
	$(GO) run ./bench/events -bin $(BIN)
	$(GO) run ./bench/logic -bin $(BIN)
	$(GO) run ./bench/scale -bin $(BIN)
	$(GO) run ./bench/startup -bin $(BIN)
	$(GO) run ./bench/forecast -bin $(BIN)
	$(GO) run ./bench/retention -bin $(BIN)
	# The cluster link: connect to first reply and a Dispatch round trip,
	# open, with the HMAC handshake, and with TLS on top.
	$(GO) test -run '^$$' -bench 'Handshake|RequestReplyAuth' -benchtime 2s ./remote/

# Failover times (kill -9 of the leader, of a worker; 5 runs each at the
# default 5 s session timeout) and chain/fan-out figures of a real cluster:
# ZooKeeper, MariaDB, masters and workers as separate processes.
bench-failover: deps build
	$(GO) run ./bench/failover -bin $(BIN)

# The soak (tests/soak, docs/reliability.md): two masters, two workers, a
# private ZooKeeper and MariaDB under a mixed workload and seeded random
# faults for MINUTES, then a drain and the invariants against the tasks'
# ledger and the DB. A failing seed prints its replay line.
MINUTES      ?= 10
SEED         ?= 1
SOAK_TIMEOUT ?= 3h
soak: deps
	$(GO) test -count=1 -timeout $(SOAK_TIMEOUT) -run '^TestSoak$$' -v ./tests/soak -minutes=$(MINUTES) -seed=$(SEED)$(if $(KEEP), -keep=$(KEEP))

lint:
	$(GO) vet $(PKGS)
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); exit 1)

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf bin beluga-data

# The container deployment (docker/). compose-secrets writes the cluster's
# secrets as files under docker/secrets (once); compose-test builds the image
# and runs the compose cluster end to end (tests/compose), as .ci/run does.
compose-secrets:
	./scripts/compose-secrets.sh

compose-images:
	./scripts/compose-images.sh || [ $$? = 3 ]

compose-test:
	BUILD=$(BUILD) ./scripts/compose-test.sh
