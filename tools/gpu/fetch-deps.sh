#!/usr/bin/env bash
# Run on a Debian 12 machine with network: downloads into .debs/ the Debian
# packages that a GPU machine without Qt lacks (tools/gpu/check.sh unpacks
# them into a private prefix there):
#  - the build: Qt 6 (Core, Test, Gui, Widgets, PrintSupport and their CMake
#    files and tools), QCustomPlot, the OpenGL headers Qt's CMake files ask
#    for, Eigen, nlohmann-json, Oniguruma and utf8proc (the tokenizer's
#    regexes and Unicode normalization; headers and shared libraries);
#  - the GUI at run time, offscreen: Qt's platform plugins, fontconfig with
#    the DejaVu fonts, freetype/harfbuzz, the GL dispatch libraries, X11/xcb
#    client libraries Qt links against, D-Bus.
# About 30 MB; with the repository it stays under the 64 MiB that travel.
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p .debs
cd .debs
build=(
  libqt6core6 libqt6test6 qt6-base-dev qt6-base-dev-tools qmake6 qmake6-bin
  libicu72 libdouble-conversion3 libb2-1 libpcre2-16-0 libglib2.0-0
  nlohmann-json3-dev libeigen3-dev
  libonig5 libonig-dev libutf8proc2 libutf8proc-dev
  libqcustomplot-dev libgl-dev libglx-dev libopengl-dev libegl-dev libgles-dev
)
gui=(
  libqt6gui6 libqt6widgets6 libqt6printsupport6 libqt6opengl6 libqt6dbus6 qt6-qpa-plugins
  libqcustomplot2.1-qt6 libmd4c0 libxkbcommon0
  libegl1 libglx0 libopengl0 libglvnd0 libgl1 libgles2
  libfontconfig1 fontconfig-config fonts-dejavu-core libfreetype6 libharfbuzz0b libgraphite2-3
  libpng16-16 libbrotli1 libdbus-1-3 libx11-6 libx11-data libxcb1 libxau6 libxdmcp6 libbsd0 libmd0
)
apt-get download "${build[@]}" "${gui[@]}"
du -sh .
