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

mapfile -t uses < <(awk '
	{ sub(/\/\/.*/, "") }
	/^use[ \t]*\(/ { block = 1; next }
	block && /^\)/ { block = 0; next }
	block && NF { print $1; next }
	/^use[ \t]+[^(]/ { print $2 }
' go.work)

modules=()
missing=()
for m in "${uses[@]}"; do
	m=${m#./}
	if [[ -f "$m/go.mod" ]]; then
		modules+=("$m")
	else
		missing+=("$m")
	fi
done

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

plugins=(gateway/plugins-local/src/github.com/supportplatform/*)

if $download_only; then
	for m in "${modules[@]}"; do
		(cd "$m" && go mod download)
	done
	exit 0
fi

status=0
for m in "${modules[@]}"; do
	echo "=== $m"
	(cd "$m" && go test -race -count=1 -timeout 20m ./...) || status=1
done
for plugin in "${plugins[@]}"; do
	echo "=== $plugin"
	(cd "$plugin" && GOWORK=off go test -race -count=1 ./...) || status=1
done
exit $status
