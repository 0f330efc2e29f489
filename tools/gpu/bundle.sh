#!/usr/bin/env bash
# Packs what travels to the GPU machine into .gpudeps/ (ignored), smaller than
# the .debs themselves so that it and the repository stay under the 64 MiB a
# call may carry:
#   .gpudeps/deps.tar.xz        every package of .debs/ (tools/gpu/fetch-deps.sh)
#                               unpacked into one prefix, without /usr/share/doc and
#                               man pages (31 MB of .debs -> about 25 MB)
#   .gpudeps/tokenizers.tar.xz  the tokenizer files named in SDW_BUNDLE_TOKENIZERS
#                               (default: mistral) from .tokenizers/
#                               (tools/reference/fetch_tokenizers.sh), for the checks
#                               against the `tokenizers` library there
# tools/gpu/env.sh unpacks deps.tar.xz (and, when .gpudeps/ is absent, .debs/).
#
#   tools/gpu/bundle.sh            then carry .gpudeps in the call
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p .gpudeps
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for f in .debs/*.deb; do dpkg -x "$f" "$tmp/p"; done
rm -rf "$tmp/p/usr/share/doc" "$tmp/p/usr/share/man" "$tmp/p/usr/share/lintian"
ls .debs > "$tmp/p/.packages"
tar -C "$tmp/p" -cf - . | xz -9e -T0 > .gpudeps/deps.tar.xz
names=${SDW_BUNDLE_TOKENIZERS:-mistral}
tar -C . -cf - $(for n in ${names//,/ }; do echo ".tokenizers/$n"; done) | xz -9e -T0 > .gpudeps/tokenizers.tar.xz
tracked=$(git ls-files -z | xargs -0 du -cb | tail -1 | cut -f1)
carried=$(du -cb .gpudeps | tail -1 | cut -f1)
echo "deps $(du -b .gpudeps/deps.tar.xz | cut -f1) B, tokenizers $(du -b .gpudeps/tokenizers.tar.xz | cut -f1) B;" \
  "with the tracked files $(( (tracked + carried) / 1048576 )) MiB of 64"
