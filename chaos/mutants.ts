/**
 * Planted bugs: each one a small text patch to a COPY of `lib/`, applied by `npm run chaos --
 * --mutants` (and, for the cheapest, by test/chaos/mutants.spec.ts). A patch whose text is not found
 * exactly once throws: when the library is refactored, the patch must be updated, never silently skipped.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { FaultKind } from './nemesis.js';
import type { Settings } from './phase.js';

export interface Mutant {
  name: string;
  /** What the bug is, in a line. */
  bug: string;
  /** Edits to files under lib/: `find` must occur exactly once. */
  patches: { file: string; find: string; replace: string }[];
  /**
   * The short chaos pass that should catch it: fault type, restart guard. `cluster-failover`: the
   * cluster phase's guarded pass (chaos/cluster-phase.ts), in the harness's process.
   */
  phase: {
    fault: FaultKind | 'cluster-failover';
    guard: boolean;
    variants?: number[];
    ttl?: number;
    settings?: Partial<Settings>;
    /** Seconds of faults when the run's (8) are too few for the bug to show. */
    seconds?: number;
    /** Client processes, when the run's (4) are too few. */
    clients?: number;
  };
}

/** Hot contention without long holds (as the hot-contention phase, with the run's client count). */
const HOT: Partial<Settings> = { hotResources: 4, hotWorkers: 3, coldWorkers: 0, hotHoldMs: [1, 3], hotLongShare: 0 };

export const MUTANTS: Mutant[] = [
  {
    name: 'quorum-of-1',
    bug: 'one master is a quorum',
    patches: [{ file: 'errors/outcomes.ts', find: 'return Math.floor(masterCount / 2) + 1;', replace: 'return 1;' }],
    // Without a fault every client reaches every master, and the handoff's tickets give a free key to
    // the same waiter on every master: one-master grants never collide. A partition does: a bridge
    // (half the clients see m1 m2 m3, the others m3 m4 m5) and a minority island (half see only m1 m2)
    // let both sides win on disjoint masters.
    phase: { fault: 'partition', guard: true, variants: [0, 2] },
  },
  {
    name: 'release-without-value-check',
    bug: "release deletes the key whatever its value (another holder's lock included)",
    patches: [
      {
        file: 'kinds/mutex/release.lua',
        find: "if redis.pcall('get', KEYS[i]) == ARGV[1] then\n    redis.call('del', KEYS[i])",
        replace: "if true then\n    redis.call('del', KEYS[i])",
      },
      {
        // single-key releases on a cluster node or a prefixed connection go through the handoff release script
        file: 'lua/includes/release-or-hand-over.lua',
        find: "if redis.pcall('get', lockKey) ~= lockValue then return 0 end\nredis.call('del', lockKey)",
        replace: "redis.call('del', lockKey)",
      },
      {
        // and on a plain master, its own uncontended path (plain-release.lua, plain-batch.lua)
        file: 'lua/includes/plain-release-key.lua',
        find: "  if redis.pcall('get', lockKey) ~= lockValue then return 0 end\n  redis.call('del', lockKey)",
        replace: "  redis.call('del', lockKey)",
      },
    ],
    phase: { fault: 'none', guard: true },
  },
  {
    name: 'fencing-not-increasing',
    bug: 'every fencing token is 1',
    patches: [
      {
        file: 'kinds/fencing.ts',
        find: 'if (await votes.decided) return proposed;',
        replace: 'if (await votes.decided) return 1;',
      },
    ],
    phase: { fault: 'none', guard: true },
  },
  {
    name: 'no-release-after-failed-attempt',
    bug: 'a failed attempt leaves the keys it won on the masters',
    patches: [
      {
        file: 'kinds/mutex/mutex-kind.ts',
        // the undo of a failed attempt (a ticketed one's too) begins with this early return
        find: 'if (refused.every(Boolean)) return Promise.resolve();',
        replace: 'return Promise.resolve();',
      },
    ],
    phase: { fault: 'none', guard: true },
  },
  {
    name: 'renewal-stops-silently',
    bug: 'renewal extends once, then stops without telling anyone',
    patches: [{ file: 'lock/renewal.ts', find: 'if (!stopped) planNext();', replace: '' }],
    phase: { fault: 'none', guard: true },
  },
  {
    name: 'no-validity-check',
    bug: 'a quorum won after the TTL is accepted (validity not checked)',
    patches: [
      {
        file: 'engine/attempt-loop.ts',
        find: "if (result.outcome === 'granted' && validUntil > now()) return",
        replace: "if (result.outcome === 'granted' && (validUntil > now() || true)) return",
      },
    ],
    phase: { fault: 'client-stall', guard: true, variants: [2] }, // stalls of 1.3 × TTL
  },
  {
    name: 'guard-always-trusts',
    bug: 'the restart guard trusts a master that restarted empty at once',
    patches: [
      {
        file: 'backend/health/restart-guard.ts',
        find: 'trusts(i: number): boolean {\n    if (this.#pending[i]) return false;',
        replace: 'trusts(i: number): boolean {\n    if (i >= 0) return true;\n    if (this.#pending[i]) return false;',
      },
    ],
    // Four of a long holder's masters restarted empty. A 3 s TTL leaves the holder over a second of
    // window after the restart, longer than its contenders take to reconnect to the restarted masters.
    phase: { fault: 'kill-restart', guard: true, variants: [3], ttl: 3_000 },
  },
  {
    name: 'no-signal-abort',
    bug: "a lost lock's signal never aborts",
    patches: [
      { file: 'lock/lock.ts', find: 'this.#controller?.abort(reason);', replace: '' },
      {
        file: 'lock/lock.ts',
        find: 'if (this.#lostReason) controller.abort(this.#lostReason);',
        replace: 'if (this.#lostReason) void 0;',
      },
    ],
    // A majority paused past the TTL: every holder then in its section loses its lock. All hot holds
    // long (past the TTL, on renewals), so that holders are mid-section on every hot key when it comes.
    phase: { fault: 'master-pause', guard: true, variants: [2], settings: { hotHoldMs: [1_200, 2_500] } },
  },
  // Claims: validity overstated on each path that issues it. Links slowed by 40 ms each way make a
  // round's end, or a message's arrival, 40 ms or more after the masters' writes; the checker compares
  // each holder's believed deadline with the window end the masters' history gives.
  {
    name: 'acquire-validity-from-round-end',
    bug: "an acquisition's validity is counted from the end of its round, not its start",
    patches: [
      {
        file: 'engine/attempt-loop.ts',
        find: 'const validUntil = validUntilOf(result.start, ttl, this.state.options.driftFactor);',
        replace: 'const validUntil = validUntilOf(now(), ttl, this.state.options.driftFactor);',
      },
    ],
    phase: { fault: 'proxy-delay', guard: true, variants: [2] },
  },
  {
    name: 'extend-validity-from-round-end',
    bug: "an extension's validity is counted from the end of its round, not its start",
    patches: [
      {
        file: 'engine/lifecycle.ts',
        find: 'const validUntil = validUntilOf(start, ttl, state.options.driftFactor);',
        replace: 'const validUntil = validUntilOf(now(), ttl, state.options.driftFactor);',
      },
    ],
    // Long holds on every hot key, so that renewals run all through the slowed rounds.
    phase: { fault: 'proxy-delay', guard: true, variants: [2], settings: { hotLongShare: 0.5 } },
  },
  {
    name: 'handover-dated-when-noticed',
    bug: 'a handed-over lock is dated from when the waiter noticed the handover, not from the masters',
    patches: [
      {
        file: 'engine/attempt-loop.ts',
        find: 'const until = this.#ledger.validUntil(this.#budget.handedAt, state.quorum, trusted, ttl, state.options.driftFactor);',
        replace:
          'const until = this.#ledger.validUntil(this.#budget.handedAt, state.quorum, trusted, ttl, state.options.driftFactor) === undefined ? undefined : validUntilOf(now(), ttl, state.options.driftFactor);',
      },
    ],
    phase: { fault: 'proxy-delay', guard: true, variants: [2], settings: HOT },
  },
  {
    name: 'handover-one-master',
    bug: "a handover is counted from one master's message (a quorum of one)",
    patches: [
      {
        file: 'engine/attempt-loop.ts',
        find: 'const until = this.#ledger.validUntil(this.#budget.handedAt, state.quorum, trusted, ttl, state.options.driftFactor);',
        replace:
          'const until = this.#ledger.validUntil(this.#budget.handedAt, 1, trusted, ttl, state.options.driftFactor);',
      },
    ],
    // Hot contention: tickets register while releases run, so the masters' queues differ for a
    // moment and a release hands the key to different waiters on different masters.
    phase: { fault: 'partition', guard: true, variants: [0, 2], settings: HOT },
  },
  {
    name: 'handover-from-distrusted-master',
    bug: 'a handover counts from a master the restart guard distrusts',
    patches: [
      {
        file: 'engine/attempt-loop.ts',
        find: 'const trusted = (i: number): boolean => state.trusts(i) === true;',
        replace: 'const trusted = (i: number): boolean => i >= 0;',
      },
    ],
    // Three of a long holder's masters killed early in its hold and back at once with all their keys
    // and queues: the holder's release reaches them while they are inside their amnesia window (a TTL
    // from the kill) and the guard distrusts them, and hands the key to the next ticket there. A 3 s
    // TTL keeps that window open past the restart and the clients' reconnection; holds of 1.5–2.5 s
    // end inside it. A waiter that counts those masters' handover has a quorum only with them:
    // `grant counted a distrusted master`. Two clients hand the library their own clients with a
    // jittered retryStrategy, so their subscribers may hear the restarted servers first.
    phase: {
      fault: 'lagging-restart',
      guard: true,
      variants: [4],
      ttl: 3_000,
      seconds: 30, // about six rounds: a round's release lands inside the window about every other time
      settings: { hotResources: 1, hotLongShare: 1, hotLongHoldMs: [1_500, 2_500], userClients: ['c1', 'c2'] },
    },
  },
  // Claims, the drift allowance: TTL × driftFactor + 2 ms (12 ms at the run's 1 s TTL) against the
  // checker's 5 ms tolerance. No fault needed: every grant and extension overclaims by the drift less
  // the few ms from a round's start to the masters' writes.
  {
    name: 'drift-not-subtracted',
    bug: "an acquisition's and an extension's validity do not subtract the drift allowance",
    patches: [
      {
        file: 'util/clock.ts',
        find: 'return start + ttl - driftOf(ttl, driftFactor);',
        replace: 'return start + ttl;',
      },
    ],
    phase: { fault: 'none', guard: true },
  },
  {
    name: 'handover-drift-not-subtracted',
    bug: "a handed-over lock's validity does not subtract the drift allowance",
    patches: [
      {
        file: 'kinds/mutex/handoff.ts',
        find: 'return bounds[quorum - 1] + ttl - driftOf(ttl, driftFactor);',
        replace: 'return bounds[quorum - 1] + ttl;',
      },
    ],
    // Hot contention: most grants are handovers.
    phase: { fault: 'none', guard: true, settings: HOT },
  },
  {
    name: 'extend-quorum-of-one',
    bug: 'an extension succeeds when one master renewed it (a renewal on a minority)',
    patches: [
      {
        file: 'kinds/mutex/mutex-kind.ts',
        find: 'quorum.quorum,\n      timeout,\n      (m) => m.scripts.quorumLockExtend(',
        replace: '1,\n      timeout,\n      (m) => m.scripts.quorumLockExtend(',
      },
    ],
    // A majority paused past the TTL while long holds renew: the two masters still up renew, and
    // the holder believes a full TTL more that no quorum gives it.
    phase: { fault: 'master-pause', guard: true, variants: [2], settings: { hotHoldMs: [1_200, 2_500] } },
  },
  {
    name: 'guard-window-short',
    bug: 'the restart guard distrusts a restarted master for a quarter of the TTL only (not TTL + drift)',
    patches: [
      {
        file: 'engine/engine-state.ts',
        find: 'return ttl + driftOf(ttl, this.options.driftFactor);',
        replace: 'return ttl / 4;',
      },
    ],
    // As guard-always-trusts: four of a long holder's masters restarted empty at once, 3 s TTL.
    phase: { fault: 'kill-restart', guard: true, variants: [3], ttl: 3_000 },
  },
  // Cluster shards are vetted like masters (lib/backend/cluster/cluster-identity.ts, master-monitor.ts `vetRoutes`).
  {
    name: 'shard-failover-trusted',
    bug: "a cluster node whose shard failed over (a replica promoted in its primary's place) is not distrusted",
    patches: [
      {
        file: 'backend/cluster/cluster-identity.ts',
        find: "change: owners.has(now.nodeId) ? 'slot-moved' : 'failover',",
        replace: "change: owners.has(now.nodeId) ? 'slot-moved' : 'same',",
      },
    ],
    // The cluster phase's guarded pass: the shard serving a held key fails over on two of the three
    // cluster nodes at once (killed, or FAILOVER FORCE / TAKEOVER) and the promoted replica lacks the
    // key. A library that trusts the promoted replica at once grants the held lock again (the control
    // pass, guard off, does so about once per double failover).
    phase: { fault: 'cluster-failover', guard: true, seconds: 60 },
  },
  // The cluster phase's token check: it excuses an inversion only where its counter readings show the
  // counter gone back on a fence quorum of clusters (chaos/cluster-inversions.ts), so tokens that do
  // not increase with no counter lost must still fail it.
  {
    name: 'fencing-not-increasing-on-clusters',
    bug: 'every fencing token is 1, with Redis Clusters as the nodes',
    patches: [
      {
        file: 'kinds/fencing.ts',
        find: 'if (await votes.decided) return proposed;',
        replace: 'if (await votes.decided) return 1;',
      },
    ],
    phase: { fault: 'cluster-failover', guard: true, seconds: 30 },
  },
  // The batched plain path: each call must read its own entry of the batch's reply.
  {
    name: 'batch-reply-misread',
    bug: "a call of a batched script reads its neighbour's entry of the reply (a refused SET counted as a grant)",
    patches: [
      {
        file: 'backend/write-batcher.ts',
        find: 'const entry = replies[i];',
        replace: 'const entry = replies[(i + 1) % group.length];',
      },
    ],
    // A hot key's first attempt, refused by its holder, rides in one batch with the cold workers'
    // calls of the same process (granted SETs, releases): read as theirs, the refusal is a grant.
    phase: { fault: 'none', guard: true },
  },
  // Waiting: queue bookkeeping that strands a free key.
  {
    name: 'expired-tickets-never-pruned',
    bug: "tickets whose lease expired stay in the masters' queues (a free key keeps going to them)",
    patches: [
      {
        file: 'lua/includes/prune-queue.lua',
        find: "local dead = redis.call('zrangebyscore', leaseKey, '-inf', now)",
        replace: 'local dead = {}',
      },
    ],
    // Queues of one TTL before restored on three masters without their claims hash (evicted, or an
    // AOF from before claims): tickets long gone come back first and, with no claim deadline, claim
    // until their leases lapse. Pruned at once, they are harmless; never pruned, they keep a free key
    // from every waiter on a majority. (With the claims hash restored too, a dead ticket's claim has
    // lapsed before its lease: left in the queue it only lengthens the ranks waiters read.)
    // 14 s: a key stranded after the restart guard's window must outlast the waiting bound.
    phase: { fault: 'lagging-restart', guard: true, variants: [7], settings: HOT, seconds: 14 },
  },
];

/**
 * Library variants that are not bugs: a documented feature turned off, for a baseline pass beside
 * the default (the full run's key-loss phase runs once with each). Applied like the mutants.
 */
export const LIBRARY_VARIANTS: Mutant[] = [
  {
    name: 'no-quorum-repair',
    bug: 'quorum repair off: an extension never re-takes the key on masters that lost it (the library before docs/quorum-repair.md)',
    patches: [
      {
        file: 'engine/lifecycle.ts',
        find: 'if (repair) void round.settled.then(() => repair(state, lock, ttl, timeout, round.replies));',
        replace: 'if (repair) void round.settled;',
      },
    ],
    phase: { fault: 'key-loss', guard: true },
  },
];

/** Copies `libDir` to `outDir` and applies the mutant's patches there; throws if a patch does not apply exactly once. */
export function writeMutant(mutant: Mutant, libDir: string, outDir: string): void {
  if (existsSync(outDir)) rmSync(outDir, { recursive: true, force: true });
  mkdirSync(outDir, { recursive: true });
  cpSync(libDir, outDir, { recursive: true });
  for (const p of mutant.patches) {
    const path = join(outDir, p.file);
    const text = readFileSync(path, 'utf8');
    const count = text.split(p.find).length - 1;
    if (count !== 1) {
      throw new Error(
        `mutant ${mutant.name} (${mutant.bug}): the patch for lib/${p.file} found its text ${count} times (expected exactly once); the library changed: re-anchor this patch in chaos/mutants.ts on the line that now does the same thing. It looked for:\n${p.find}`,
      );
    }
    writeFileSync(
      path,
      text.replace(p.find, () => p.replace),
    );
  }
  // A patch to a script: the copy's script table is generated again from its .lua files.
  if (mutant.patches.some((p) => p.file.endsWith('.lua')))
    execFileSync(process.execPath, [join(dirname(libDir), 'scripts', 'build-lua.mjs'), '--lib', outDir], {
      stdio: 'pipe',
    });
}
