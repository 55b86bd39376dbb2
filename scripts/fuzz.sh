#!/usr/bin/env bash
# Runs every Go fuzz target of the repository (func FuzzXxx in a _test.go
# file) for FUZZTIME each (default 30s), one after another, so a new target
# is included without editing anything. FUZZ, a regular expression, limits
# the run to the targets whose names match (FUZZ=FuzzQuery).
#
# The seed corpora (f.Add and testdata/fuzz/FuzzXxx/) run in every
# `go test`, hence in `make test`. A failing input found here is written by
# Go to testdata/fuzz/FuzzXxx/ next to the target: fix the bug and commit the
# file, so that it stays a seed.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-30s}
filter=${FUZZ:-.}

# "dir name" lines, in a stable order.
mapfile -t targets < <(
	git ls-files --cached --others --exclude-standard -- '*_test.go' |
		xargs grep -HoE '^func Fuzz[A-Za-z0-9_]*\(' |
		sed -E 's#^(.*)/[^/]*_test\.go:func (Fuzz[A-Za-z0-9_]*)\($#\1 \2#' |
		grep -E " ${filter#^}" | sort -u
)
if ((${#targets[@]} == 0)); then
	echo "no fuzz targets match ${filter}"
	exit 1
fi
echo "${#targets[@]} fuzz targets, ${fuzztime} each"

status=0
summary=()
for t in "${targets[@]}"; do
	dir=${t% *}
	name=${t#* }
	env=()
	# The Traefik plugins are modules of their own outside go.work.
	[[ $dir == gateway/plugins-local/* ]] && env=(GOWORK=off)
	echo "=== $dir $name"
	start=$SECONDS
	if (cd "$dir" && env "${env[@]}" go test -run='^$' -fuzz="^${name}\$" -fuzztime="$fuzztime" .); then
		result=ok
	else
		result=FAIL
		status=1
	fi
	summary+=("$(printf '%-4s %4ds  %s %s' "$result" $((SECONDS - start)) "$dir" "$name")")
done
echo "=== summary (wall time includes building the instrumented test binary)"
printf '%s\n' "${summary[@]}"
exit $status
