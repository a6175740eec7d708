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
exec node --expose-gc bench/.out/bench/main.js "$@"
