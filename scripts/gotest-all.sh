#!/usr/bin/env bash
# Runs `go test -race -count=1 ./...` in every module that go.work lists
# (`go test ./...` at a go.work root covers none of them), then in the
# gateway's Traefik plugin, which Traefik interprets and no workspace lists.
# With -download it only downloads the modules' dependencies.
#
# Modules named in go.work whose directory has no go.mod yet (services being
# written) are skipped with a notice, through a temporary go.work that lists
# only the present ones.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

download_only=false
if [[ "${1:-}" == "-download" ]]; then
	download_only=true
fi

source scripts/modules.sh

if ((${#missing[@]} > 0)); then
	echo "note: skipping modules without go.mod: ${missing[*]}"
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	{
		grep -m1 '^go ' go.work
		echo "use ("
		for m in "${modules[@]}"; do echo "	$root/$m"; done
		echo ")"
	} >"$tmp/go.work"
	[[ -f go.work.sum ]] && cp go.work.sum "$tmp/go.work.sum"
	export GOWORK="$tmp/go.work"
fi

if $download_only; then
	for m in "${modules[@]}"; do
		(cd "$m" && go mod download)
	done
	exit 0
fi

# The whole output is also kept, so that a failure's own messages can be
# repeated at the end, where a CI log's tail shows them.
out=$(mktemp -t sp-test-output-XXXXXX.log)
status=0
for m in "${modules[@]}"; do
	echo "=== $m"
	(cd "$m" && go test -race -count=1 -timeout 20m ./...) 2>&1 | tee -a "$out" || status=1
done
for plugin in "${plugins[@]}"; do
	echo "=== $plugin"
	(cd "$plugin" && GOWORK=off go test -race -count=1 ./...) 2>&1 | tee -a "$out" || status=1
done
if ((status != 0)); then
	echo
	echo "=== failures (the whole output is in $out)"
	# The failed tests and packages, and the messages of t.Error and
	# t.Fatal and the testing package (file.go:N: ...), each cut to 500 characters.
	grep -E -e '--- FAIL|^FAIL|^panic:|^\s+[A-Za-z0-9_.]+\.go:[0-9]+: ' "$out" | cut -c1-500 | tail -n 120 || true
else
	rm -f "$out"
fi
exit $status
