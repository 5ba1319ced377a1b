#!/usr/bin/env bash
# Installs, only when missing, what cross-building the engine for Linux arm64 (glibc) and Linux
# x64 (musl) on a Debian 12 x64 machine needs (scripts/lib/cross-build.mjs calls it):
#   - the standard library of both targets for the pinned Rust (rust-toolchain.toml names
#     them; `rustup target add` fetches what is missing);
#   - gcc-aarch64-linux-gnu and libc6-dev-arm64-cross: the C compiler, linker and glibc headers
#     for arm64 (libpg_query's C, and bindgen's view of it);
#   - musl-tools: musl-gcc, musl's headers and its C library for x64;
#   - clang and libclang-dev: bindgen (as for the native build).
# and what running those engines on this machine needs (test/engine-platforms.test.ts, through
# scripts/foreign-node.mjs; scripts/prepare-machine.sh installs these for the test suite):
#   - qemu-user-static, libc6-arm64-cross, libstdc++6-arm64-cross: qemu-aarch64 with an arm64
#     glibc and C++ runtime for Node's arm64 build (QEMU_LD_PREFIX=/usr/aarch64-linux-gnu);
#   - musl: musl's dynamic loader, for a Node built against musl;
#   - python3-pip, when `python3 -m pip` is missing: that Node comes from PyPI.
#
#   scripts/prepare-cross.sh            cross-build and run packages
#   scripts/prepare-cross.sh --emulate  only the run packages (what the test suite needs)
#
# Idempotent; apt-get as root on Debian/Ubuntu; elsewhere it prints what to install and fails.
set -euo pipefail

emulate=(qemu-user-static libc6-arm64-cross libstdc++6-arm64-cross musl)
build=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross musl-tools clang libclang-dev)
case "${1:-}" in
  --emulate) wanted=("${emulate[@]}") ;;
  '') wanted=("${emulate[@]}" "${build[@]}") ;;
  *) echo "prepare-cross: unknown option $1 (use --emulate or nothing)" >&2; exit 2 ;;
esac

have_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }
missing=()
for pkg in "${wanted[@]}"; do
  command -v dpkg-query >/dev/null 2>&1 && have_pkg "$pkg" || missing+=("$pkg")
done
python3 -m pip --version >/dev/null 2>&1 || missing+=(python3-pip)
# shellcheck source=lib/apt-install.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/apt-install.sh"
apt_install prepare-cross "${missing[@]}"

if [ "${1:-}" != --emulate ]; then
  cd "$(dirname "${BASH_SOURCE[0]}")/.."
  installed=$(rustup target list --installed)
  for target in aarch64-unknown-linux-gnu x86_64-unknown-linux-musl; do
    grep -qx "$target" <<<"$installed" || rustup target add "$target"
  done
fi
