# Shared set-up for scripts/test.sh, scripts/sample.sh and .ci/run: installs what a fresh machine lacks.
# Source it, then call the functions you need.

# Installs the Node packages from package-lock.json when node_modules is missing or older than the lock.
ensure_node_modules() {
  if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
    echo "setup: installing Node packages (npm ci)"
    npm ci --no-audit --no-fund
  fi
}

# Makes sure redis-server is on PATH (or REDIS_SERVER points to it); installs Debian's package when possible.
ensure_redis_server() {
  if [ -n "${REDIS_SERVER:-}" ] && [ -x "${REDIS_SERVER}" ]; then return 0; fi
  if command -v redis-server >/dev/null 2>&1; then return 0; fi
  if command -v apt-get >/dev/null 2>&1; then
    local sudo=""
    if [ "$(id -u)" -ne 0 ]; then
      if command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
        echo "setup: redis-server is missing and installing it needs root. Run: sudo apt-get install -y redis-server" >&2
        return 1
      fi
    fi
    echo "setup: installing redis-server (apt-get)"
    $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq redis-server >/dev/null
    # Debian starts a system redis on 6379; the tests start their own servers on free ports and do not use it.
  fi
  if ! command -v redis-server >/dev/null 2>&1; then
    echo "setup: redis-server is not installed. Install it (Debian/Ubuntu: apt-get install -y redis-server; macOS: brew install redis)" >&2
    echo "       or set REDIS_SERVER to its path." >&2
    return 1
  fi
}
