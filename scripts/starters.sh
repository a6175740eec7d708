#!/usr/bin/env bash
# The starter apps under examples/ (Nest 11 CommonJS + Jest/ts-jest + TypeScript 5.7, Nest 12 ESM +
# vitest), each with the library wired as the README shows. Packs the built library (`npm run build`
# first), installs each starter's own locked dependencies (npm ci) and the packed library, then runs
# the starter's unchanged build, type-check, `npm test` and `npm run test:e2e` against 3 fresh
# redis-server masters on free loopback ports. Usage: bash scripts/starters.sh [nest11-cjs|nest12-esm ...]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
ensure_redis_server
starters=("$@")
[ ${#starters[@]} -gt 0 ] || starters=(nest11-cjs nest12-esm)

work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

tarball=$(npm pack --ignore-scripts --pack-destination "$work" --silent 2>/dev/null | tail -1)
echo "starters: packed $tarball"

nodes=()
for i in 1 2 3; do
  port=$(node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })')
  "${REDIS_SERVER:-redis-server}" --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$work" --dbfilename "dump-$port.rdb" >"$work/redis-$port.log" 2>&1 &
  pids+=("$!")
  nodes+=("redis://127.0.0.1:$port")
  for _ in $(seq 50); do grep -q "Ready to accept connections" "$work/redis-$port.log" && break; sleep 0.1; done
done
export REDLOCK_NODES
REDLOCK_NODES=$(IFS=,; echo "${nodes[*]}")
echo "starters: masters $REDLOCK_NODES"

for starter in "${starters[@]}"; do
  (
    cd "examples/$starter"
    started=$(date +%s)
    echo "== starter $starter"
    # npm ci refuses a lockfile that lacks platform packages a registry mirror has not caught up with
    # (@swc/core-<platform>); npm install --no-save then installs the same locked versions.
    npm ci --no-audit --no-fund --ignore-scripts --loglevel=error >/dev/null 2>&1 ||
      npm install --no-save --no-audit --no-fund --ignore-scripts --loglevel=error >/dev/null
    rm -rf node_modules/nestjs-quorum-lock && mkdir -p node_modules/nestjs-quorum-lock
    tar -xzf "$work/$tarball" -C node_modules/nestjs-quorum-lock --strip-components=1
    echo "   Nest $(node -p 'require("@nestjs/core/package.json").version'), TypeScript $(node -p 'require("typescript/package.json").version')"
    npm run --silent build
    npm run --silent typecheck
    npm test --silent
    npm run --silent test:e2e
    if [ "$starter" = nest11-cjs ]; then # the range Nest 11 lockfiles pin: the lowest ran above, the others type-check here
      for ts in 5.8 5.9; do # installed beside the starter, so its node_modules (and the packed library) stay as they are
        npm install --prefix "$work/typescript-$ts" --no-audit --no-fund --ignore-scripts --loglevel=error "typescript@~$ts" >/dev/null
        node "$work/typescript-$ts/node_modules/typescript/bin/tsc" --noEmit -p tsconfig.json
        echo "   type-checks with TypeScript $(node -p "require('$work/typescript-$ts/node_modules/typescript/package.json').version")"
      done
    fi
    echo "   $starter passed in $(( $(date +%s) - started )) s"
  )
done
