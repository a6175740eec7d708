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
npm run build
rm -rf dist-chaos
npx tsc -p chaos/tsconfig.json
exec node dist-chaos/chaos/main.js "$@"
