#!/usr/bin/env bash
# `npm run bench`: installs what a fresh clone lacks (npm ci, redis-server), builds the library, compiles
# bench/ and tools/ into dist-bench/ (bench/ imports the library by its package name, resolved to dist/),
# and runs the benchmark; the results go to docs/evidence/. Flags go to bench/main.ts (`npm run bench -- --help`).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
ensure_node_modules
ensure_redis_server
npm run build
rm -rf dist-bench
npx tsc -p bench/tsconfig.json
# --compare (this checkout against another commit), --memory, --render and --help run main.ts alone.
case " $* " in *" --help "*|*" -h "*|*" --compare "*|*" --compare="*|*" --memory "*|*" --render "*) exec node --expose-gc dist-bench/bench/main.js "$@" ;; esac
node --expose-gc dist-bench/bench/main.js "$@"
# A run of chosen workloads (--workloads) is a partial run: the separate benches below are not part of it.
case " $* " in *" --workloads "*|*" --workloads="*) exit 0 ;; esac
# Separate OS processes contending for one key, this library and the peers (docs/evidence/cross-process.md).
node dist-bench/bench/cross-process.js --seconds 2
# Read lock and semaphore n=4 against the mutex and redis-semaphore's RedlockSemaphore (docs/evidence/shared-locks.md).
node dist-bench/bench/shared-locks.js --seconds 4 --workers 8
# Three 3-shard Redis Clusters against three single masters, same run (docs/evidence/clusters.md).
exec node dist-bench/bench/clusters.js --seconds 3 --rounds 3 --workers 8
