# Sourced by gotest-all.sh and lint.sh (from the repository root): sets
# `modules` to the modules go.work lists that have a go.mod, `missing` to the
# ones that do not yet (services being written), and `plugins` to the
# gateway's Traefik plugins, which no workspace lists.
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
plugins=(gateway/plugins-local/src/github.com/supportplatform/*)
