# Beluga: `make run` starts standalone; `make test` runs the whole suite.
GO      ?= go
BIN     := bin/beluga
PKGS    := ./...
TESTFLAGS ?= -race -count=1 -timeout 30m

.PHONY: build run test fuzz test-short bench bench-failover lint fmt deps clean

build:
	$(GO) build -o $(BIN) ./cmd/beluga

run: build
	./$(BIN) standalone $(ARGS)

deps:
	./scripts/deps.sh

# The whole suite: unit, end-to-end on SQLite and MariaDB, cluster tests.
test: deps
	$(GO) vet $(PKGS)
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1)
	$(GO) test $(TESTFLAGS) $(PKGS)
	$(MAKE) fuzz

# Each fuzz target runs briefly beyond its seed corpus (5-10 s each here,
# the instrumented build cached). What it learns stays in Go's fuzz cache,
# $$(go env GOCACHE)/fuzz, outside the repository; an input that fails is
# written to the package's testdata/fuzz, to be committed with its fix.
FUZZTIME ?= 5s
FUZZ     := FuzzDecode:./remote/frame FuzzHandshake:./remote FuzzParse:./common/spec FuzzResolve:./common/params FuzzSwitch:./tasks/switch

fuzz:
	@for t in $(FUZZ); do \
		echo "fuzz $${t%%:*} ($(FUZZTIME))"; \
		$(GO) test -run='^$$' -fuzz="^$${t%%:*}$$" -fuzztime=$(FUZZTIME) $${t#*:} || exit 1; \
	done

test-short:
	$(GO) test -short -count=1 $(PKGS)

# Benchmarks print figures (see README); they are not pass/fail tests.
bench: deps build
	$(GO) run ./bench -bin $(BIN)
	$(GO) run ./bench/control -bin $(BIN)
	$(GO) run ./bench/logic -bin $(BIN)
	# The cluster link: connect to first reply and a Dispatch round trip,
	# open, with the HMAC handshake, and with TLS on top.
	$(GO) test -run '^$$' -bench 'Handshake|RequestReplyAuth' -benchtime 2s ./remote/

# Failover times (kill -9 of the leader, of a worker; 5 runs each at the
# default 5 s session timeout) and chain/fan-out figures of a real cluster:
# ZooKeeper, MariaDB, masters and workers as separate processes.
bench-failover: deps build
	$(GO) run ./bench/failover -bin $(BIN)

lint:
	$(GO) vet $(PKGS)
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); exit 1)

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf bin beluga-data
