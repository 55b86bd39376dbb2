#!/usr/bin/env bash
# Static checks: gofmt, go vet and staticcheck over every module that go.work
# lists, then over the gateway's Traefik plugins (separate modules, GOWORK=off).
# Exits non-zero on any finding. staticcheck is pinned to STATICCHECK_VERSION
# and installed into bin/ when that version is missing there, so a fresh
# machine needs nothing but Go and the module proxy.
#
# staticcheck and vet run per module: in workspace mode a pattern such as
# ./services/... matches no module, and each module has its own build list.
# gateway/build only pins the Traefik binary (no Go code of ours): not linted.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

version=${STATICCHECK_VERSION:-v0.8.2}
staticcheck=$root/bin/staticcheck
# `staticcheck -version` prints e.g. "staticcheck 2026.2.2 (0.8.2)".
if ! "$staticcheck" -version 2>/dev/null | grep -qF "(${version#v})"; then
	echo "installing staticcheck $version into bin/"
	GOWORK=off GOBIN=$root/bin go install "honnef.co/go/tools/cmd/staticcheck@$version"
fi

source scripts/modules.sh
for m in "${missing[@]}"; do
	echo "note: skipping $m (no go.mod)"
done

status=0

unformatted=$(git ls-files -z --cached --others --exclude-standard -- '*.go' | xargs -0 gofmt -l)
if [[ -n "$unformatted" ]]; then
	echo "gofmt: not formatted (run gofmt -w):"
	echo "$unformatted"
	status=1
fi

check() { # dir [env...]
	local dir=$1
	shift
	echo "=== lint $dir"
	(cd "$dir" && env "$@" go vet ./...) || status=1
	(cd "$dir" && env "$@" "$staticcheck" ./...) || status=1
}
for m in "${modules[@]}"; do
	check "$m"
done
for plugin in "${plugins[@]}"; do
	check "$plugin" GOWORK=off
done

if ((status != 0)); then
	echo "lint: findings above"
fi
exit $status
