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
#   .gpudeps/engine.tar.xz      with SDW_BUNDLE=engine instead of deps.tar.xz: only what
#                               the engine, sdw-cli and the non-GUI suites build with
#                               (Qt Core and Test, Eigen, JSON, Oniguruma, utf8proc; no
#                               GUI libraries, fonts or X11, no headers but Qt Core's and Test's),
#                               about 6.5 MB smaller, for a
#                               call whose tree is near the 64 MiB limit
# tools/gpu/env.sh unpacks deps.tar.xz or engine.tar.xz (and, when .gpudeps/ is absent,
# .debs/); with engine.tar.xz it configures without the GUI (SDW_BUILD_GUI=OFF).
#
#   tools/gpu/bundle.sh                      then carry .gpudeps/deps.tar.xz in the call
#   SDW_BUNDLE=engine tools/gpu/bundle.sh    then carry .gpudeps/engine.tar.xz
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p .gpudeps
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
archive=deps
# The engine bundle: the build packages of tools/gpu/fetch-deps.sh less the GUI's (Qt's
# headers and CMake files stay whole: qt6-base-dev is one package).
engine='^(libqt6core6|libqt6test6|qt6-base-dev|qt6-base-dev-tools|qmake6|qmake6-bin|libicu72|libdouble-conversion3|libb2-1|libpcre2-16-0|libglib2.0-0|nlohmann-json3-dev|libeigen3-dev|libonig5|libonig-dev|libutf8proc2|libutf8proc-dev)_'
[ "${SDW_BUNDLE:-all}" = engine ] && archive=engine
for f in .debs/*.deb; do
  [ "$archive" = engine ] && ! [[ "${f##*/}" =~ $engine ]] && continue
  dpkg -x "$f" "$tmp/p" && echo "${f##*/}" >> "$tmp/p/.packages"
done
rm -rf "$tmp/p/usr/share/doc" "$tmp/p/usr/share/man" "$tmp/p/usr/share/lintian"
if [ "$archive" = engine ]; then
  # What the engine build does not read (it finds Qt's Core and Test only; libQt6Core
  # needs glib, not gio; no header of Eigen's unsupported/): about 1.4 MB of the archive.
  for d in "$tmp"/p/usr/include/x86_64-linux-gnu/qt6/*; do
    case "${d##*/}" in QtCore | QtTest) ;; *) rm -rf "$d" ;; esac
  done
  rm -rf "$tmp/p/usr/share/qt6/doc" "$tmp/p/usr/include/eigen3/unsupported" \
    "$tmp"/p/usr/lib/x86_64-linux-gnu/libgio-2.0.so* "$tmp/p/usr/lib/x86_64-linux-gnu/gio"
fi
tar -C "$tmp/p" -cf - . | xz -9e -T0 > ".gpudeps/$archive.tar.xz"
names=${SDW_BUNDLE_TOKENIZERS:-mistral}
if [ -n "$names" ] && [ -d .tokenizers ]; then
  tar -C . -cf - $(for n in ${names//,/ }; do echo ".tokenizers/$n"; done) | xz -9e -T0 > .gpudeps/tokenizers.tar.xz
fi
tracked=$(git ls-files -z | xargs -0 stat -c %s | awk '{s += $1} END {print s}')  # (du -c per xargs batch undercounts)
carried=$(du -cb ".gpudeps/$archive.tar.xz" $(ls .gpudeps/tokenizers.tar.xz 2>/dev/null) | tail -1 | cut -f1)
echo "$archive $(du -b ".gpudeps/$archive.tar.xz" | cut -f1) B, tokenizers $(du -b .gpudeps/tokenizers.tar.xz 2>/dev/null | cut -f1) B;" \
  "with the tracked files $(( (tracked + carried) / 1048576 )) MiB of 64" \
  "(a call was refused at 63.3 MiB by this count: keep about 1 MiB spare)"
