#!/usr/bin/env bash
# Install Debian's Chromium, which the slow tests use to open the built
# book in a real (headless) browser.
set -euo pipefail
command -v chromium >/dev/null 2>&1 && exit 0
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo -n"
apt-cache show chromium >/dev/null 2>&1 || $sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium
echo "chromium: $(chromium --version)"
