#!/usr/bin/env bash
# `npm run chaos`: installs what a fresh clone lacks (npm ci, redis-server), builds the library,
# compiles chaos/ (and the tools it uses) into dist-chaos/, and runs the fault-injection suite.
# The clients import the library by its package name, which resolves to the built dist/ through
# the package's self-reference. Flags go to chaos/main.ts (`npm run chaos -- --help`).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
ensure_node_modules
ensure_redis_server
ensure_faketime
npm run build
rm -rf dist-chaos
npx tsc -p chaos/tsconfig.json
case " $* " in *" --help "*|*" -h "*) exec node dist-chaos/chaos/main.js "$@" ;; esac
status=0
node dist-chaos/chaos/main.js "$@" || status=$?
# The semaphore and read-write phases (same faults but client-pause; see chaos/shared-locks.ts);
# not with --mutants, whose planted bugs run in main.js only.
case " $* " in *" --mutants "*) exit "$status" ;; esac
node dist-chaos/chaos/shared-locks.js "$@" || status=$((status > 0 ? status : 1))
exit "$status"
