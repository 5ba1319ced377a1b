#!/usr/bin/env bash
# Installs, only when missing, what building and testing pg-retest-action needs from the system:
#   - libclang and clang headers: the SQL parser (libpg_query, via the pg_query crate) is
#     compiled from C and its bindings are generated with bindgen;
#   - PostgreSQL server binaries, for the throwaway servers of the test suite (other majors come
#     from npm);
#   - PgBouncer, the connection pooler the gate's pooler tests put in front of a server;
#   - a `postgres` user, because PostgreSQL refuses to run as root;
#   - what running the arm64 and musl engines here needs (qemu-user-static, arm64 glibc, musl:
#     scripts/prepare-cross.sh --emulate), for test/engine-platforms.test.ts;
#   - the toolchains of the driver apps test/capture-drivers.test.ts captures (test/drivers/):
#     Python's venv (psycopg from PyPI), a JDK and Maven (pgjdbc from Maven Central); Go 1.25+
#     (pgx) has no Debian 12 package, so it is only checked.
# Idempotent: on a prepared machine it checks and exits. Uses apt-get (Debian/Ubuntu, as root);
# elsewhere it prints what to install and fails.
set -euo pipefail

missing=()
have_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }
have_libclang() {
  [ -n "${LIBCLANG_PATH:-}" ] && return 0
  if command -v dpkg-query >/dev/null 2>&1; then
    have_pkg libclang-dev && have_pkg clang
  else
    ldconfig -p 2>/dev/null | grep -q 'libclang'
  fi
}
have_postgres() { compgen -G '/usr/lib/postgresql/*/bin/postgres' >/dev/null || command -v postgres >/dev/null 2>&1; }
have_pgbouncer() { command -v pgbouncer >/dev/null 2>&1 || [ -x /usr/sbin/pgbouncer ]; }
have_venv() { command -v python3 >/dev/null 2>&1 && python3 -c 'import venv, ensurepip' >/dev/null 2>&1; }

have_libclang || missing+=(libclang-dev clang)
have_postgres || missing+=(postgresql)
have_pgbouncer || missing+=(pgbouncer)
have_venv || missing+=(python3-venv)
command -v javac >/dev/null 2>&1 || missing+=(default-jdk-headless)
command -v mvn >/dev/null 2>&1 || missing+=(maven)

# shellcheck source=lib/apt-install.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/apt-install.sh"
apt_install prepare-machine "${missing[@]}"

if [ "$(id -u)" -eq 0 ] && ! id -u postgres >/dev/null 2>&1; then
  useradd --system --user-group --no-create-home --shell /usr/sbin/nologin postgres
fi

# Not fatal: only test/engine-platforms.test.ts needs these, and it names them when they are missing.
"$(dirname "${BASH_SOURCE[0]}")/prepare-cross.sh" --emulate || echo "prepare-machine: without those, test/engine-platforms.test.ts fails" >&2

# Not fatal: only test/capture-drivers.test.ts needs it, and it names it when it is missing.
command -v go >/dev/null 2>&1 || echo "prepare-machine: go not found; install Go 1.25 or newer for test/capture-drivers.test.ts (pgx)" >&2

for tool in node npm cargo; do
  command -v "$tool" >/dev/null 2>&1 || {
    echo "prepare-machine: $tool not found; install Node.js >= 20 and Rust (rustup) first" >&2
    exit 1
  }
done

# The Rust that rust-toolchain.toml pins, with its components (rustfmt: `npm test` checks
# formatting) and targets; it only checks when they are there.
(cd "$(dirname "${BASH_SOURCE[0]}")/.." && rustup toolchain install >/dev/null) || {
  echo "prepare-machine: the Rust of rust-toolchain.toml could not be installed; run: rustup toolchain install (in the repository)" >&2
  exit 1
}
