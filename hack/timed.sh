#!/usr/bin/env bash
# Runs one tier of `make test` (or any step) and, pass or fail, prints how
# long it took when it ends, so a slow or failing tier is named with its
# time among the output of all of them.
#
# Usage: bash hack/timed.sh <name> <command> [args...]
set -uo pipefail

name=$1
shift
# Under `make -n` only the recipes holding $(MAKE) run, to print the
# sub-make's: a time of that would be no tier's.
flags=${MAKEFLAGS:-}
flags=${flags%% *}
if [[ $flags != -* && $flags == *n* ]]; then
	exec "$@"
fi
start=$SECONDS
"$@"
rc=$?
elapsed=$((SECONDS - start))
status=passed
if ((rc != 0)); then
	status="failed (exit $rc)"
fi
printf '== %s %s in %dm%02ds\n' "$name" "$status" $((elapsed / 60)) $((elapsed % 60))
exit "$rc"
