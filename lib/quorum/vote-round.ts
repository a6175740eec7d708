import type { Distrust } from '../backend/health/master-state.js';
import type { MasterOutcome } from '../errors/outcomes.js';
import { explainFailure, type Master } from '../backend/master.js';
import { coalesceWrites } from '../backend/write-batcher.js';

/** Whether master `index`'s vote counts: true, or why not. */
export type TrustCheck = (index: number) => boolean | Distrust | undefined;

/** One script call sent to every master at once, and how the votes are coming in. */
export interface VoteRound {
  /** Resolves as soon as the result is known: true on a quorum of grants, false once a quorum is out of reach. */
  readonly decided: Promise<boolean>;
  /** Resolves when every master has answered or timed out. */
  readonly settled: Promise<void>;
  /** Each master's outcome, in master order; entries are filled in as answers arrive. */
  readonly outcomes: (MasterOutcome | undefined)[];
  /** Each master's raw reply, in master order (undefined until it answers). */
  readonly replies: unknown[];
}

/**
 * Sends `send(master)` to all masters in parallel and counts the votes. It decides as soon as a quorum
 * for, or a blocking minority against, is known, without waiting for a hung master. One timer bounds
 * the whole round: masters that have not answered within `timeoutMs` count as timeouts. `batched`:
 * `send` joins the loop turn's batch on the connection itself (lib/backend/write-batcher.ts).
 */
export function voteRound(
  masters: readonly Master[],
  quorum: number,
  timeoutMs: number,
  send: (master: Master) => Promise<unknown>,
  isGranted: (reply: unknown) => boolean,
  trusts?: TrustCheck,
  batched = false,
): VoteRound {
  const n = masters.length;
  const outcomes: (MasterOutcome | undefined)[] = new Array(n).fill(undefined);
  const replies: unknown[] = new Array(n).fill(undefined);
  let granted = 0;
  let against = 0;
  let pending = n;
  let decide!: (won: boolean) => void;
  let decidedYet = false;
  const decided = new Promise<boolean>((resolve) => (decide = resolve));
  // `settled` is made only when read: most rounds are awaited on `decided` alone.
  let settle: (() => void) | undefined;
  let settled: Promise<void> | undefined;
  let settledYet = false;

  const record = (i: number, outcome: MasterOutcome): void => {
    if (outcomes[i] !== undefined) return; // a late answer after the timeout
    outcomes[i] = outcome;
    pending--;
    if (outcome.status === 'granted') granted++;
    else against++;
    if (!decidedYet && (granted >= quorum || against > n - quorum)) {
      decidedYet = true;
      decide(granted >= quorum);
    }
    if (pending === 0) {
      clearTimeout(timer);
      settledYet = true;
      settle?.();
    }
  };

  // Timers run before pending I/O in Node's loop: after a stall of this process (a loaded machine),
  // answers that arrived in time are still unread when the timer fires. Read them first
  // (setImmediate runs after the I/O poll), so only masters that really did not answer time out.
  const timer = setTimeout(() => {
    setImmediate(() => {
      for (let i = 0; i < n; i++)
        if (outcomes[i] === undefined) record(i, { master: masters[i].label, status: 'timeout' });
    });
  }, timeoutMs);
  timer.unref();

  for (let i = 0; i < n; i++) {
    const master = masters[i];
    if (master.excluded) {
      record(i, excludedOutcome(master, trusts?.(i)));
      continue;
    }
    let reply: Promise<unknown>;
    try {
      // A batched call joins the connection's batch itself; any other command is written in call order after it.
      if (!batched) coalesceWrites(master);
      reply = send(master);
    } catch (error) {
      reply = Promise.reject(error);
    }
    reply.then(
      (value) => {
        if (outcomes[i] === undefined) replies[i] = value;
        record(i, outcomeOf(master, value, trusts ? trusts(i) : true, isGranted));
      },
      (error: unknown) =>
        record(i, {
          master: master.label,
          status: 'error',
          error: explainFailure(master, error instanceof Error ? error : new Error(String(error))),
        }),
    );
  }
  return {
    decided,
    get settled(): Promise<void> {
      return (settled ??= settledYet ? Promise.resolve() : new Promise<void>((resolve) => (settle = resolve)));
    },
    outcomes,
    replies,
  };
}

/** The outcome of a master the library does not ask (excluded), with how long it has been distrusted. */
function excludedOutcome(master: Master, trust: ReturnType<TrustCheck>): MasterOutcome {
  const distrustedFor = trust && trust !== true ? trust.distrustedFor : 0;
  return { master: master.label, status: 'excluded', distrust: master.excluded, distrustedFor };
}

/** A master's answer as its vote: trusted, its reply decides; else why the vote does not count. */
function outcomeOf(
  master: Master,
  value: unknown,
  trust: ReturnType<TrustCheck>,
  isGranted: (reply: unknown) => boolean,
): MasterOutcome {
  if (trust === false) return { master: master.label, status: 'restarted' };
  if (trust === true || trust === undefined)
    return { master: master.label, status: isGranted(value) ? 'granted' : 'refused' };
  return {
    master: master.label,
    status: trust.status,
    distrust: trust.distrust,
    distrustedFor: trust.distrustedFor,
    ...(trust.shard !== undefined ? { shard: trust.shard } : {}),
  };
}
