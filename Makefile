# relay: `make install` puts relay in $(go env GOPATH)/bin; `make test` runs every test tier.
GO      ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X github.com/relaydev/relay/internal/cli.version=$(VERSION)
# relay needs no C code (SQLite is modernc's Go translation), and a static binary starts
# without the dynamic loader, libc and cgo's thread set-up: about a tenth of `relay version`
# (bench/startup.sh). Tests keep cgo: the race detector needs it.
BUILD   := CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)'

.PHONY: build install test test-go test-sdk lint fuzz bench

# BUILD_OUT: where `make build` puts the binary (benchmarks build into their own directories).
BUILD_OUT ?= bin/relay

build:
	$(BUILD) -o $(BUILD_OUT) ./cmd/relay

install:
	CGO_ENABLED=0 $(GO) install -trimpath -ldflags '$(LDFLAGS)' ./cmd/relay
	@case ":$$PATH:" in *":$$($(GO) env GOPATH)/bin:"*) ;; \
	  *) echo "relay is in $$($(GO) env GOPATH)/bin; add it to PATH: export PATH=\"$$($(GO) env GOPATH)/bin:\$$PATH\"" ;; esac

# The whole suite: Go (unit, conformance, fuzz seeds, testscript end to end) with
# the race detector, then the SDK, web UI and real-CLI tiers, which skip with a
# message when their tools are missing (.ci/run installs them). Both run even
# when the first fails, so one run reports every failure.
test:
	@st=0; $(MAKE) --no-print-directory test-go || st=1; $(MAKE) --no-print-directory test-sdk || st=1; exit $$st

# The real-CLI tier of relay ask runs when scripts/install-friend-clis.sh has
# installed codex, gemini, claude and qwen under .cache/friend-clis. Tests whose
# shared conformance data (../shared) is missing skip; go test hides that for
# passing packages, so they log it to $$RELAY_SKIP_LOG and one line sums it up.
test-go:
	@if [ -x .cache/friend-clis/node_modules/.bin/codex ]; then export RELAY_REAL_CLIS=1; \
	  else echo "note: friend CLIs not installed (scripts/install-friend-clis.sh); the real-CLI tier of relay ask is skipped"; fi; \
	  skips=$$(mktemp); export RELAY_SKIP_LOG=$$skips; \
	  $(GO) test -race -count=1 -timeout 30m ./...; st=$$?; \
	  echo "the daemon's scripts again, with relay built position-independent as Linux distributions build it:"; \
	  GOFLAGS=-buildmode=pie CGO_ENABLED=0 $(GO) test -count=1 -run 'TestScript/daemon_' ./internal/cli || st=1; \
	  if [ -s $$skips ]; then echo "note: $$(wc -l < $$skips) conformance tests skipped: ../shared/$$(cut -f1 $$skips | sort -u | paste -sd, - | sed 's/,/, ..\/shared\//g') not found beside the repository"; fi; \
	  rm -f $$skips; exit $$st

test-sdk:
	@if [ -x scripts/test-sdk.sh ]; then scripts/test-sdk.sh; fi

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) tool staticcheck ./...
	@# the binary builds where users run it, not only on Linux (a unix-only syscall broke Windows once),
	@# and the tests and benchmarks compile there too, so `go test ./...` runs on a Mac or on Windows;
	@# linux/386 because int is 32 bits there (a 5 GiB limit once overflowed it)
	@for t in windows/amd64 darwin/arm64 linux/386; do echo "cross-build ./cmd/relay and vet ./... for $$t"; \
	  GOOS=$${t%/*} GOARCH=$${t#*/} CGO_ENABLED=0 $(GO) build -o /dev/null ./cmd/relay || exit 1; \
	  GOOS=$${t%/*} GOARCH=$${t#*/} CGO_ENABLED=0 $(GO) vet ./... || exit 1; done

fuzz:
	scripts/fuzz.sh

# Go benchmarks, then relay against the engines relaycode shipped on real LLM
# patches (needs node and npm; not part of make test or CI).
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...
	bench/patch-accuracy/run.sh
