# Thin entry points; the logic lives in deploy/cmd/devstack, deploy/cmd/bench
# and scripts/. The deploy module is built outside the workspace
# (GOWORK=off, its own go.sum) so these targets work while other modules of
# go.work are still being written.
GO      ?= go
DEVSTACK = bin/devstack

.PHONY: run test bench build traefik infra deps devstack

## run: build everything, start infra, seed the demo customer, run all services behind the gateway (Ctrl-C stops)
run: devstack
	$(DEVSTACK) run

## test: unit, integration and end-to-end tests of every module in go.work
test: deps traefik infra
	scripts/gotest-all.sh

## bench: GET /api/Customers/me through the gateway vs. a static handler behind the same gateway
bench: traefik infra
	cd deploy && GOWORK=off $(GO) run ./cmd/bench $(BENCH_FLAGS)

## build: service binaries and traefik into bin/
build: devstack
	$(DEVSTACK) build

## traefik: bin/traefik, the pinned build from gateway/build (cached in ~/.cache/supportplatform)
traefik: devstack
	$(DEVSTACK) traefik

## infra: PostgreSQL, Redis, NATS up; Debian packages the services need installed
infra: devstack
	$(DEVSTACK) infra

## deps: download the Go modules of every module
deps:
	scripts/gotest-all.sh -download

devstack:
	cd deploy && GOWORK=off $(GO) build -o ../$(DEVSTACK) ./cmd/devstack
