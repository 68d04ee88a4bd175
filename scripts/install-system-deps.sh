#!/usr/bin/env bash
# System packages the tests need: Debian's chromium for the review-page browser test
# (Playwright drives it by executable path; it never downloads a browser of its own).
# Idempotent and quiet when everything is present; needs root (CI and the dev machines are root).
set -euo pipefail
need=()
command -v chromium >/dev/null 2>&1 || need+=(chromium)
# The code sandbox: libseccomp for its seccomp filter, and Debian's python3 for its workers (the
# sandbox uid must be able to import the interpreter's standard library; pyenv under /root is 0700).
dpkg -s libseccomp2 >/dev/null 2>&1 || need+=(libseccomp2)
[ -x /usr/bin/python3 ] || need+=(python3)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "install-system-deps: missing ${need[*]}; run as root or install them yourself" >&2
    exit 0
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
