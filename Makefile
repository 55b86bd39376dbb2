# Thin entry points; the logic lives in deploy/cmd/devstack, deploy/cmd/bench, deploy/cmd/soak
# and scripts/. The deploy module is built outside the workspace
# (GOWORK=off, its own go.sum) so these targets work while other modules of
# go.work are still being written.
GO      ?= go
FUZZTIME ?= 30s
DEVSTACK = bin/devstack

.PHONY: run test lint fuzz bench soak build traefik infra deps devstack docs-assets docs-check console-assets console-check console-budgets

## run: build everything, start infra, seed the demo customer, run all services behind the gateway (Ctrl-C stops)
run: devstack
	$(DEVSTACK) run

## test: static checks (make lint) first, then unit, integration and end-to-end tests of every module in go.work
test: lint deps traefik infra
	scripts/gotest-all.sh

## lint: gofmt, go vet and staticcheck (pinned, installed into bin/) over every module and the Traefik plugins
lint:
	scripts/lint.sh

## fuzz: every Go fuzz target (func FuzzXxx, found by grep) for FUZZTIME each (default 30s), one after another; FUZZ=regexp picks some
fuzz:
	FUZZTIME=$(FUZZTIME) scripts/fuzz.sh

## bench: GET /api/Customers/me through the gateway vs. a static handler behind the same gateway
bench: traefik infra
	cd deploy && GOWORK=off $(GO) run ./cmd/bench $(BENCH_FLAGS)

## bench-scale: one customer's tickets grown to 10,000, 100,000, 1,000,000 (3 messages each) beside 99 customers of 10,000; p50/p99 of each tickets operation per size (SCALE_FLAGS, e.g. -scale-sizes 10000,100000)
bench-scale: traefik infra
	cd deploy && GOWORK=off $(GO) run ./cmd/bench -cases tickets-scale $(SCALE_FLAGS)

## soak: SOAK_DURATION (default 10m) at half the measured peak through the gateway over a mix of routes; errors and RSS growth per service (not in make test)
soak: traefik infra
	cd deploy && GOWORK=off $(GO) run ./cmd/soak $(SOAK_FLAGS)

## build: service binaries and traefik into bin/
build: devstack
	$(DEVSTACK) build

## traefik: bin/traefik, the pinned build from gateway/build (cached in ~/.cache/supportplatform)
traefik: devstack
	$(DEVSTACK) traefik

## infra: PostgreSQL, Redis, NATS up; Debian packages the services need (and pgbouncer for the tests) installed
infra: devstack
	$(DEVSTACK) infra

## docs-assets: vendor the pinned OpenAPI viewer (npm ci) into services/docs and copy gateway/openapi.yaml there
docs-assets:
	scripts/docs-assets.sh

## docs-check: open /docs through a real gateway in headless Chromium, check every operation is listed; screenshot bin/docs.png
docs-check: traefik infra
	mkdir -p bin
	cd gateway && DOCS_SCREENSHOT=$(CURDIR)/bin/docs.png $(GO) test -count=1 -v -run 'TestReferencePage|TestPageThroughTheGateway' ./e2edocs/

## console-assets: build the agent console (npm ci --ignore-scripts, API types from gateway/openapi.yaml, tsc, Vite) into services/console/internal/webapp/dist
console-assets:
	scripts/console-assets.sh

## console-check: the console through a real gateway in headless Chromium (sign in, inbox, ticket, live update); screenshots bin/console-*.png
console-check: traefik infra
	mkdir -p bin
	cd gateway && CONSOLE_SCREENSHOTS=$(CURDIR)/bin $(GO) test -count=1 -v ./e2econsole/
	$(MAKE) console-budgets

## console-budgets: 100,000 tickets of one customer, the inbox's first page timed in headless Chromium, initial JS, Lighthouse on inbox and ticket (reports bin/lighthouse-*); fails on a missed budget
console-budgets: traefik infra
	mkdir -p bin
	cd scripts/lighthouse && PUPPETEER_SKIP_DOWNLOAD=1 npm ci --ignore-scripts --no-audit --no-fund
	cd gateway && $(GO) run ./cmd/consolebudgets $(BUDGETS_FLAGS)

## deps: download the Go modules of every module
deps:
	scripts/gotest-all.sh -download

devstack:
	cd deploy && GOWORK=off $(GO) build -o ../$(DEVSTACK) ./cmd/devstack
