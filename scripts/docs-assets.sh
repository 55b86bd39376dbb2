#!/usr/bin/env bash
# make docs-assets: installs the pinned OpenAPI viewer (swagger-ui-dist, from
# services/docs/web/package.json and its package-lock.json) with `npm ci` in a
# temporary directory and copies the files the page serves, with their
# licences, into services/docs/internal/reference/swaggerui; then copies
# gateway/openapi.yaml to the copy the docs binary embeds. The results are
# committed: building and running the docs service needs neither npm nor the
# network. To upgrade the viewer: change the version in package.json, run
# `npm install --package-lock-only --ignore-scripts` in services/docs/web,
# then this.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
web=services/docs/web
dest=services/docs/internal/reference/swaggerui
files=(swagger-ui-bundle.js swagger-ui-bundle.js.LICENSE.txt swagger-ui.css favicon-32x32.png LICENSE NOTICE)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$web/package.json" "$web/package-lock.json" "$tmp/"
# --ignore-scripts: no install scripts run (swagger-ui-dist depends on
# @scarf/scarf, whose install script reports downloads).
(cd "$tmp" && SCARF_ANALYTICS=false npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)

pkg="$tmp/node_modules/swagger-ui-dist"
rm -rf "$dest"
mkdir -p "$dest"
for f in "${files[@]}"; do
	cp "$pkg/$f" "$dest/$f"
done
# The version actually installed, read by the docs service's tests.
node -e 'process.stdout.write(require(process.argv[1]).version + "\n")' "$pkg/package.json" >"$dest/VERSION"
# Source maps are left out: the bundle's last line points at one.
sed -i '/^\/\/# sourceMappingURL=/d' "$dest/swagger-ui-bundle.js"
sed -i 's#/\*\# sourceMappingURL=[^*]*\*/##' "$dest/swagger-ui.css"

cp gateway/openapi.yaml services/docs/internal/reference/openapi.yaml
echo "docs-assets: swagger-ui-dist $(cat "$dest/VERSION") in $dest; openapi.yaml copied"
