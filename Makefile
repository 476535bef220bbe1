# Warrant. `make test` is what CI runs; `make run` brings the local stack up.
SHELL := /bin/bash
GO ?= go
PKGS := ./...
FUZZTIME ?= 3s
# package:FuzzTarget pairs run briefly by `make test` so they cannot rot.
FUZZ_TARGETS := \
	./pkg/contracts:FuzzParseEventLine \
	./pkg/contracts:FuzzDecodeStrict \
	./pkg/contracts:FuzzAppendCanonical \
	./pkg/toolpolicy:FuzzLoad \
	./pkg/toolpolicy:FuzzJoinedStringsDetectAsEach \
	./pkg/pricing:FuzzParseUSD \
	./pkg/reducer:FuzzApply \
	./pkg/remote:FuzzRedactJSON \
	./pkg/notify:FuzzEscape \
	./pkg/seal:FuzzOpen

.PHONY: test lint fmt-check vet mod-tidy gotest fuzz bench

test: lint gotest fuzz validate demo

# gotest has run ./deploy already: validate runs cfn-lint and the transform
# (deploy/validate.sh), not the same tests a second time.
test: export VALIDATE_GO_TEST := skip

lint: fmt-check vet mod-tidy

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

# go.mod and go.sum say exactly what the code imports (a direct dependency
# is not marked // indirect); prints the diff `go mod tidy` would apply.
mod-tidy:
	$(GO) mod tidy -diff

# pkg/handlers walks every crash point on minidyn and moto (moto answers
# some 400 operations a second); the default 10 minutes per package is
# too close on a busy 2-core machine.
#
# The longest packages are named first: go test starts packages in the order
# given (./... then adds the rest, each once), so the longest does not start
# last and run alone while the other core idles (pkg/handlers, which started
# after most others, was the last quarter of the step on its own).
#
# -parallel 4: pkg/handlers' crash walks (its only parallel tests, with
# localapi's TestSlowModelFastAPI) run four at a time, not GOMAXPROCS (2):
# the moto walks wait on moto's one process, so with two slots one of them
# held a slot idle while the minidyn walks queued on the other. Measured
# alone on 2 cores, in one sitting: 638 s at -parallel 2, 549 s at 4.
SLOW_PKGS := ./pkg/handlers ./cmd/localapi ./pkg/desk ./deploy ./pkg/dynamo
gotest:
	$(GO) test -race -count=1 -parallel 4 -timeout 18m $(SLOW_PKGS) $(PKGS)

# A failing input the fuzzer finds is written under the package's
# testdata/fuzz and fails the target at once (it is a seed from then on).
# A failure that leaves no such input (a worker the machine starved or
# killed) is printed and the target is run once more.
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; fn=$${t##*:}; \
		for try in 1 2; do \
			echo "fuzz $$pkg $$fn ($(FUZZTIME))"; \
			before=$$(ls $$pkg/testdata/fuzz/$$fn 2>/dev/null | wc -l); \
			if out=$$($(GO) test -run '^$$' -fuzz "^$$fn$$" -fuzztime $(FUZZTIME) $$pkg 2>&1); then break; fi; \
			echo "$$out" | tail -n 40; \
			after=$$(ls $$pkg/testdata/fuzz/$$fn 2>/dev/null | wc -l); \
			if [ "$$after" != "$$before" ] || [ $$try = 2 ]; then \
				echo "fuzz $$fn failed; rerun: go test -run '^$$' -fuzz '^$$fn$$' $$pkg"; exit 1; \
			fi; \
			echo "fuzz $$fn: the run failed without a failing input; once more"; \
		done; \
	done

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./pkg/...

# The counsel's desk's pictures in docs/screenshots (the list, a warrant, the
# editor, a run page whose filing failed; 1280x900 and 390x844): the browser
# test TestScreenshots against the tests' fake API, in headless Chromium.
# make test runs the same test into a temporary directory.
.PHONY: screenshots
screenshots:
	DESK_SCREENSHOTS=$(CURDIR)/docs/screenshots $(GO) test -count=1 -run '^TestScreenshots$$' ./pkg/desk/

# ---- AWS SAM: build targets, offline validation, deploy (docs/DEPLOY.md) ----
# `sam build` (BuildMethod: makefile, CodeUri: .) runs `make build-<LogicalId>` with
# ARTIFACTS_DIR set to that function's artifact folder; Lambda runs the bootstrap there.
LAMBDA_GOBUILD = GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) build -tags lambda.norpc -trimpath -ldflags='-s -w' -o $(ARTIFACTS_DIR)/bootstrap
# The deployment's documents, built into the functions that read TOOL_POLICY,
# TOOL_CATALOG or AGENTS (docs/DEPLOY.md, "Connecting your systems"): every
# file under BUNDLE_DIR, with its folders, lands next to their bootstrap, where
# the template's ToolPolicyFile, ToolCatalogFile, AgentsFile (and an agent's
# system_prompt_file) name it. No folder, nothing copied. Keep it inside the
# tree: sam build works on a copy of the tree, and its cache (cached = true)
# hashes the tree, not this variable.
BUNDLE_DIR ?= bundle
LAMBDA_BUNDLE = bash deploy/bundle.sh "$(BUNDLE_DIR)" "$(ARTIFACTS_DIR)"
SAM_ENV ?= default

.PHONY: build validate deploy build-InvokeFunction build-ApproveFunction build-ResumeFunction build-RunsFunction build-StreamReduceFunction build-WorkerFunction build-SweeperFunction

build-InvokeFunction:
	$(LAMBDA_BUNDLE)
	$(LAMBDA_GOBUILD) ./functions/invoke

build-ApproveFunction:
	$(LAMBDA_BUNDLE)
	$(LAMBDA_GOBUILD) ./functions/approve

build-ResumeFunction:
	$(LAMBDA_BUNDLE)
	$(LAMBDA_GOBUILD) ./functions/resume

build-RunsFunction:
	$(LAMBDA_GOBUILD) ./functions/runs

build-StreamReduceFunction:
	$(LAMBDA_GOBUILD) ./functions/stream-reduce

build-WorkerFunction:
	$(LAMBDA_BUNDLE)
	$(LAMBDA_GOBUILD) ./functions/worker

build-SweeperFunction:
	$(LAMBDA_BUNDLE)
	$(LAMBDA_GOBUILD) ./functions/sweeper

# `make build`: every function's bootstrap under bin/<name>/, arm64 for deployment
# (HOST=1 builds for this machine, as the local stack does).
FUNCTIONS := invoke approve resume runs stream-reduce worker sweeper
build:
	@set -e; for f in $(FUNCTIONS); do \
		if [ -n "$(HOST)" ]; then goarch=$$($(GO) env GOARCH); goos=$$($(GO) env GOOS); else goarch=arm64; goos=linux; fi; \
		echo "build functions/$$f ($$goos/$$goarch)"; \
		GOOS=$$goos GOARCH=$$goarch CGO_ENABLED=0 $(GO) build -tags lambda.norpc -trimpath -ldflags='-s -w' -o bin/$$f/bootstrap ./functions/$$f; \
	done

# cfn-lint, the SAM transform and the template's Go test; all offline.
validate:
	GO=$(GO) bash deploy/validate.sh

# The deploy rehearsal (docs/DEPLOY.md, "Deploy rehearsal"): the translated
# template stood up in moto with IAM enforcement on, each function's role
# checked call by call. `make test` runs it already, through gotest's
# `go test ./...` (and validate's `go test ./deploy`); this runs it alone.
.PHONY: deploy-rehearsal
deploy-rehearsal:
	$(GO) test ./deploy -run TestDeployRehearsal -count=1

# Needs the SAM CLI and AWS credentials. SAM_ENV=prod deploys the [prod] environment.
deploy: validate
	sam build --config-env $(SAM_ENV)
	sam deploy --config-env $(SAM_ENV)

# ---- Local stack (docs/LOCAL.md): no Docker, no AWS account ----
.PHONY: run demo invoke localapi

# One `go build` of the stack and every binary it runs (each package
# compiled once, on both cores), into .localapi/bin where the stack's own
# build finds them up to date; the flags are the stack's (internal/rie's
# goBuild), so nothing is compiled or linked twice (BENCHMARKS.md, make run).
LOCAL_GOBUILD = CGO_ENABLED=0 $(GO) build -tags lambda.norpc -ldflags='-s -w'
localapi:
	@mkdir -p bin .localapi/bin
	$(LOCAL_GOBUILD) -o .localapi/bin/ ./cmd/localapi ./cmd/toolserver ./cmd/toolfn $(addprefix ./functions/,$(FUNCTIONS))
	@ln -f .localapi/bin/localapi bin/localapi 2>/dev/null || cp -f .localapi/bin/localapi bin/localapi

# The whole stack on loopback, walking the demo, then serving on 127.0.0.1:3000 until Ctrl-C.
run: localapi
	bin/localapi -demo

# The walkthrough headless: exits with the demo's status (part of `make test`).
demo: localapi
	bin/localapi -demo -headless

# One function under its emulator, one event: make invoke FN=invoke EVENT=events/invoke.json
invoke: localapi
	@if [ -z "$(FN)" ] || [ -z "$(EVENT)" ]; then echo "usage: make invoke FN=<function> EVENT=events/<file>.json"; exit 2; fi
	bin/localapi -invoke $(FN) -event $(EVENT)
