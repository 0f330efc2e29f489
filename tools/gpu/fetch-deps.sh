#!/usr/bin/env bash
# Run on a Debian 12 machine with network: downloads the .debs that the GPU
# machine lacks (Qt Core + Test for the test suites, Eigen, nlohmann-json)
# into .debs/, which tools/gpu/check.sh unpacks into a private prefix there.
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p .debs
cd .debs
apt-get download libqt6core6 libqt6test6 qt6-base-dev qt6-base-dev-tools libicu72 \
  libdouble-conversion3 libb2-1 libpcre2-16-0 libglib2.0-0 nlohmann-json3-dev libeigen3-dev \
  qmake6 qmake6-bin
ls -la
