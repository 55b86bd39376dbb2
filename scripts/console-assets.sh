#!/usr/bin/env bash
# make console-assets: builds the agent console (services/console/web) into
# services/console/internal/webapp/dist, which the console binary embeds and
# which is committed: building, running and testing the platform needs
# neither npm nor the network. It installs the pinned dependencies
# (package-lock.json) with `npm ci --ignore-scripts` (no install script
# runs), generates the API types from gateway/openapi.yaml, type-checks
# (tsc, strict: a contract change that breaks the app stops here), bundles
# (Vite), compresses every file (gzip and brotli) and records the hash of
# the inputs in internal/webapp/BUILD_INPUTS, which a Go test compares.
# Run it after every change to web/ or to gateway/openapi.yaml.
set -euo pipefail
cd "$(dirname "$0")/../services/console/web"
npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
npm run build
