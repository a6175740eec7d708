#!/usr/bin/env bash
# `npm test`: installs what is missing, then runs the whole suite (Jest in ESM mode) against real
# redis-server processes that the tests start and stop themselves. Extra arguments go to Jest.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
ensure_node_modules
ensure_redis_server
ensure_faketime
exec node --experimental-vm-modules node_modules/jest/bin/jest.js "$@"
