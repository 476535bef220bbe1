#!/usr/bin/env bash
# Copies the deployment's documents into one function's artifacts: the
# Makefile's LAMBDA_BUNDLE, which `sam build` runs in the build-<LogicalId>
# targets of the functions that read TOOL_POLICY, TOOL_CATALOG or AGENTS.
#   deploy/bundle.sh BUNDLE_DIR ARTIFACTS_DIR
# Every file under BUNDLE_DIR, with its folders, lands in ARTIFACTS_DIR next to
# the bootstrap, where "file:<path>" finds it (internal/wire reads a relative
# path from the executable's folder). No BUNDLE_DIR: nothing to copy. Refused,
# with nothing copied: a symbolic link (what it points to may be outside the
# copy of the tree sam build works in; copy the file itself) and a top-level
# bootstrap (it would be the function's executable).
set -euo pipefail
usage="usage: deploy/bundle.sh BUNDLE_DIR ARTIFACTS_DIR"
src=${1:?$usage}
dst=${2:?$usage}

[ -d "$src" ] || exit 0
if link=$(find "$src" -type l -print -quit) && [ -n "$link" ]; then
	echo "bundle: $link is a symbolic link; put the file itself in $src" >&2
	exit 1
fi
if [ -e "$src/bootstrap" ]; then
	echo "bundle: $src/bootstrap would replace the function's executable; rename it" >&2
	exit 1
fi
mkdir -p "$dst"
cp -R "$src/." "$dst/"
echo "bundle: $(find "$src" -type f | wc -l | tr -d ' ') file(s) from $src"
