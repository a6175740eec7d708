# Shared set-up for scripts/test.sh, scripts/sample.sh and .ci/run: installs what a fresh machine lacks.
# Source it, then call the functions you need.

# Installs the Node packages from package-lock.json when node_modules is missing or older than the lock.
ensure_node_modules() {
  if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
    echo "setup: installing Node packages (npm ci)"
    npm ci --no-audit --no-fund
  fi
}

# Makes sure redis-server is on PATH (or REDIS_SERVER points to it). Installs Debian's package only
# when running as root with apt-get (a fresh container, CI); otherwise prints the exact command.
# It never calls sudo.
ensure_redis_server() {
  if [ -n "${REDIS_SERVER:-}" ] && [ -x "${REDIS_SERVER}" ]; then return 0; fi
  if command -v redis-server >/dev/null 2>&1; then return 0; fi
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" -eq 0 ]; then
    echo "setup: installing redis-server (apt-get)"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null
    # Debian starts a system redis on 6379; the tests start their own servers on free ports and do not use it.
  fi
  if ! command -v redis-server >/dev/null 2>&1; then
    echo "setup: redis-server is not installed. Install it, then run this command again:" >&2
    if command -v apt-get >/dev/null 2>&1; then
      echo "         sudo apt-get install -y redis-server" >&2
    else
      echo "         brew install redis        (macOS)" >&2
      echo "         apt-get install -y redis-server   (Debian/Ubuntu, as root)" >&2
    fi
    echo "       or set REDIS_SERVER to the path of a redis-server binary." >&2
    return 1
  fi
}

# Makes sure Debian's libfaketime is there for the master clock faults (tools/fake-clock.ts: a test of
# test/core and the chaos clock-step phase). Installs it only when running as root with apt-get;
# otherwise prints the command (those tests then fail saying what is missing).
ensure_faketime() {
  if ls /usr/lib/*/faketime/libfaketime.so.1 >/dev/null 2>&1; then return 0; fi
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" -eq 0 ]; then
    echo "setup: installing faketime (apt-get)"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq faketime libfaketime >/dev/null
  else
    echo "setup: libfaketime is missing (for the master clock tests): sudo apt-get install -y faketime libfaketime" >&2
  fi
}
