#!/usr/bin/env bash
# `npm run bench`: installs what a fresh clone lacks (npm ci, redis-server), compiles bench/, lib/ and
# tools/ into bench/.out, and runs the benchmark. Flags go to bench/main.ts (`npm run bench -- --help`).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
ensure_node_modules
ensure_redis_server
rm -rf bench/.out
npx tsc -p bench/tsconfig.json
case " $* " in *" --help "*|*" -h "*) exec node --expose-gc bench/.out/bench/main.js "$@" ;; esac
node --expose-gc bench/.out/bench/main.js "$@"
# Separate OS processes contending for one key, this library and the peers (bench/cross-process.md).
node bench/.out/bench/cross-process.js --seconds 2
# Read lock and semaphore n=4 against the mutex and redis-semaphore's RedlockSemaphore (bench/shared-locks.md).
exec node bench/.out/bench/shared-locks.js --seconds 4 --workers 8
