# Warrant. `make test` is what CI runs; `make run` brings the local stack up.
SHELL := /bin/bash
GO ?= go
PKGS := ./...
FUZZTIME ?= 3s
# package:FuzzTarget pairs run briefly by `make test` so they cannot rot.
FUZZ_TARGETS := \
	./pkg/contracts:FuzzParseEventLine \
	./pkg/contracts:FuzzDecodeStrict \
	./pkg/toolpolicy:FuzzLoad \
	./pkg/pricing:FuzzParseUSD \
	./pkg/reducer:FuzzApply

.PHONY: test lint fmt-check vet gotest fuzz bench

test: lint gotest fuzz

lint: fmt-check vet

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

gotest:
	$(GO) test -race -count=1 $(PKGS)

fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; fn=$${t##*:}; \
		echo "fuzz $$pkg $$fn ($(FUZZTIME))"; \
		$(GO) test -run '^$$' -fuzz "^$$fn$$" -fuzztime $(FUZZTIME) $$pkg >/dev/null || \
			{ echo "fuzz $$fn failed; rerun: go test -run '^$$' -fuzz '^$$fn$$' $$pkg"; exit 1; }; \
	done

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./pkg/...
