#!/usr/bin/env bash
# `npm run sample`: sets up what is missing on a fresh machine, builds the library and the sample
# app, and runs it. With REDLOCK_NODES unset, the sample starts its own three redis-server masters.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
ensure_node_modules
if [ -z "${REDLOCK_NODES:-}" ]; then
  ensure_redis_server || {
    echo "Or point the sample at running masters: REDLOCK_NODES=redis://h1:6379,redis://h2:6379,redis://h3:6379" >&2
    exit 1
  }
fi
npm run build
rm -rf dist-sample
npx tsc -p sample/tsconfig.json
exec node dist-sample/sample/main.js "$@"
