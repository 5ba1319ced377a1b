# Sourced by scripts/prepare-machine.sh and scripts/prepare-cross.sh.
# apt_install WHO PACKAGE...: installs the packages with apt-get (root on Debian/Ubuntu), or
# prints the command to run and fails where that is not possible.
apt_install() {
  local who="$1"
  shift
  [ "$#" -eq 0 ] && return 0
  if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "$who: missing $*; install them with your package manager (as root on Debian/Ubuntu: apt-get install -y $*)" >&2
    return 1
  fi
  echo "$who: installing $*" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}
