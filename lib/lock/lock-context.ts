import { AsyncLocalStorage } from 'node:async_hooks';
import type { Lock, LockIssuer } from './lock.js';

/**
 * One `using()` / `@Locked` call running under its locks: the frame its body runs in (through
 * AsyncLocalStorage), and the turn that reentrant calls of that body take one at a time.
 *
 * Reentrancy is scoped to the call: a frame counts as held by its call chain only while the call's
 * body runs (`open`). A call made in it (nested, a sibling, a timer or an un-awaited promise started
 * inside) joins it at once, before waiting for its turn; when the body settles the frame closes, and
 * the call keeps its locks held (and renewed) until every call that joined has settled. A call that
 * comes later (a timer firing after the holder returned) finds the frame closed and acquires the lock
 * like any other caller. A call that holds a frame's turn holds all of that frame's locks: its own
 * frame lists them too, so the calls it makes never wait for the turn it holds.
 */
class HoldFrame {
  static #ids = 0;
  readonly id = ++HoldFrame.#ids;
  #open = true;
  #busy = false;
  readonly #queue: (() => void)[] = [];
  #joined = 0;
  #drained: (() => void) | undefined;

  constructor(
    /** The locks this call holds, its own first (what `currentLock()` returns). */
    readonly locks: readonly Lock[],
    readonly parent: HoldFrame | undefined,
  ) {}

  get isOpen(): boolean {
    return this.#open;
  }

  /** True when a reentrant call holds the turn or waits for it. */
  get isBusy(): boolean {
    return this.#busy || this.#queue.length > 0;
  }

  /**
   * Counts a call as joined, synchronously: this frame's locks stay held until the returned
   * function is called (once; later calls do nothing).
   */
  join(): () => void {
    this.#joined++;
    let settled = false;
    return () => {
      if (settled) return;
      settled = true;
      if (--this.#joined === 0) {
        const drained = this.#drained;
        this.#drained = undefined;
        drained?.();
      }
    };
  }

  /**
   * Takes this frame's turn, after the calls that asked before (FIFO). Resolves to the function
   * that hands it on (once); rejects with the signal's reason if it aborts first.
   */
  turn(signal: AbortSignal | undefined): Promise<() => void> {
    let handedOn = false;
    const handOn = (): void => {
      if (handedOn) return;
      handedOn = true;
      const next = this.#queue.shift();
      if (next) next();
      else this.#busy = false;
    };
    if (!this.#busy) {
      this.#busy = true;
      return Promise.resolve(handOn);
    }
    return new Promise((resolve, reject) => {
      const granted = (): void => {
        signal?.removeEventListener('abort', aborted);
        resolve(handOn);
      };
      const aborted = (): void => {
        const at = this.#queue.indexOf(granted);
        if (at >= 0) this.#queue.splice(at, 1);
        reject(signal!.reason);
      };
      if (signal?.aborted) return aborted();
      signal?.addEventListener('abort', aborted, { once: true });
      this.#queue.push(granted);
    });
  }

  /** The body settled: later calls no longer count this frame as held. */
  close(): void {
    this.#open = false;
  }

  /** Resolves once every call that joined this frame has settled. */
  drained(): Promise<void> {
    if (this.#joined === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const previous = this.#drained;
      this.#drained = () => {
        previous?.();
        resolve();
      };
    });
  }
}

const storage = new AsyncLocalStorage<HoldFrame>();

/**
 * What a call inherits from its call chain: the locks it need not acquire, the resources it must
 * acquire itself (`missing`), and the turns it holds on the frames it entered.
 */
export class ChainEntry {
  readonly #leaves: (() => void)[];

  /** @internal */
  static create(
    inherited: readonly Lock[],
    missing: readonly string[],
    leaves: (() => void)[],
    shared: readonly Lock[] = [],
  ): ChainEntry {
    return new ChainEntry(inherited, missing, leaves, shared);
  }

  /** Entries come from `enterChain`. */
  private constructor(
    /** Locks of open frames of this call chain that cover some of the resources. */
    readonly inherited: readonly Lock[],
    /** The resources no open frame of the chain holds: acquire them. */
    readonly missing: readonly string[],
    leaves: (() => void)[],
    /**
     * The other locks of the frames whose turn this call holds. Nobody else may use them until it
     * hands the turns on, and it does so only once its own calls settled: so its calls must find
     * them in its frame, never wait for a turn their caller holds.
     */
    readonly shared: readonly Lock[],
  ) {
    this.#leaves = leaves;
  }

  /**
   * Runs `fn` in a new frame holding `own` (if any), the inherited locks and the shared ones (see
   * `shared`; `fn` gets `own` or the first inherited lock). After `fn` settles, waits
   * until every call that entered the new frame has settled, then runs `release` and hands the
   * turns on. Returns `fn`'s result or error.
   */
  async run<T>(own: Lock | undefined, fn: (lock: Lock) => Promise<T> | T, release: () => Promise<void>): Promise<T> {
    const locks = [...(own ? [own] : []), ...this.inherited, ...this.shared];
    const frame = new HoldFrame(locks, storage.getStore());
    try {
      return await storage.run(frame, () => fn(locks[0]));
    } finally {
      frame.close();
      await frame.drained();
      try {
        await release();
      } finally {
        this.leave();
      }
    }
  }

  /** Hands the turns on without running (the acquisition failed or was skipped). */
  leave(): void {
    for (const leave of this.#leaves.splice(0)) leave();
  }
}

/**
 * Finds what the current call chain holds of `names` (the innermost open frame whose lock, granted
 * by `issuer`, covers each key and `covers` the request), joins each such frame at once (so that its
 * holder keeps the lock until this call settles) and then takes a turn on each, in a fixed order (so
 * two siblings asking for the same frames cannot deadlock).
 *
 * - A lock that was lost in an open frame is not inherited: the call is refused with its
 *   `LockLostError` before it runs, also when the loss came while it waited for its turn.
 * - A frame that closed (its call returned) or whose lock was released or lapsed is skipped. A lock
 *   its holder released while this call waited for its turn is acquired anew (`missing`).
 * - With `skip`, resolves to `undefined` without waiting when a frame's turn is taken.
 */
export function enterChain(
  issuer: LockIssuer,
  names: readonly string[],
  keyOf: (name: string) => string,
  covers: (lock: Lock, name: string) => boolean,
  options: { signal?: AbortSignal; skip?: boolean } = {},
): ChainEntry | undefined | Promise<ChainEntry | undefined> {
  const found = new Map<string, { frame: HoldFrame; lock: Lock }>();
  const missing: string[] = [];
  for (const name of names) {
    const held = frameHolding(issuer, keyOf(name));
    if (held && covers(held.lock, name)) found.set(name, held);
    else missing.push(name);
  }
  // Nothing inherited (the common case): no turn to wait for, so no tick lost before acquiring.
  if (found.size === 0) return ChainEntry.create([], missing, []);
  const ordered = [...new Set([...found.values()].map((f) => f.frame))].sort((a, b) => a.id - b.id);
  if (options.skip && ordered.some((f) => f.isBusy)) return undefined;
  // Joined now, while every one of these frames is open and its lock held: none releases before this call settles.
  const joined = ordered.map((frame) => ({
    frame,
    settle: frame.join(),
    handOn: undefined as (() => void) | undefined,
  }));
  return takeTurns(joined, found, missing, options.signal);
}

async function takeTurns(
  joined: { frame: HoldFrame; settle: () => void; handOn: (() => void) | undefined }[],
  found: Map<string, { frame: HoldFrame; lock: Lock }>,
  missing: string[],
  signal: AbortSignal | undefined,
): Promise<ChainEntry> {
  const leave = (entry: (typeof joined)[number]): void => {
    entry.handOn?.();
    entry.settle();
  };
  const inherited = new Set<Lock>();
  try {
    for (const entry of joined) entry.handOn = await entry.frame.turn(signal);
    // Waiting for a turn may have outlasted an inherited lock: never run on a lost or released one.
    for (const [name, { lock }] of found) {
      if (lock.lostReason) throw lock.lostReason;
      if (lock.isHeld) inherited.add(lock);
      else missing.push(name); // its holder released it meanwhile: acquire it like any other caller
    }
  } catch (error) {
    for (const entry of joined) leave(entry);
    throw error;
  }
  const used = new Set([...found.values()].filter((f) => inherited.has(f.lock)).map((f) => f.frame));
  const leaves: (() => void)[] = [];
  for (const entry of joined) {
    if (used.has(entry.frame)) leaves.push(() => leave(entry));
    else leave(entry); // none of its locks is used: hand it on now
  }
  // Holding a frame's turn means holding all of its locks: the calls made in this one find them here.
  const shared = new Set([...used].flatMap((frame) => frame.locks).filter((lock) => !inherited.has(lock)));
  return ChainEntry.create([...inherited], missing, leaves, [...shared]);
}

/** The innermost open frame of the chain holding `key` for `issuer`; throws the reason of a lost one. */
function frameHolding(issuer: LockIssuer, key: string): { frame: HoldFrame; lock: Lock } | undefined {
  for (let frame = storage.getStore(); frame; frame = frame.parent) {
    if (!frame.isOpen) continue;
    for (const lock of frame.locks) {
      if (!lock.isIssuedBy(issuer) || !lock.keys.includes(key)) continue;
      if (lock.lostReason) throw lock.lostReason;
      if (lock.isHeld) return { frame, lock };
    }
  }
  return undefined;
}

/**
 * The live lock of this call chain that `issuer` granted on the Redis `key`, if any: held, and in a
 * frame whose call is still running. Matching on the key and the issuer, not the bare resource name,
 * keeps two `Redlock`s with other prefixes or other masters from mistaking each other's locks.
 */
export function lockHeldInChain(issuer: LockIssuer, key: string): Lock | undefined {
  try {
    return frameHolding(issuer, key)?.lock;
  } catch {
    return undefined; // lost: not held
  }
}

/** Runs `fn` with `lock` as the innermost lock of the current call chain (no turns, no waiting for entries). */
export function runWithLock<T>(lock: Lock, fn: () => T): T {
  return storage.run(new HoldFrame([lock], storage.getStore()), fn);
}

/**
 * The lock held by the current call chain: the innermost one, or the one covering `resource`.
 * Inside a `@Locked` method or a `using()` callback it gives the lock's `signal` and remaining
 * `validity`; elsewhere, in work left running after that call returned, and once the lock was
 * released, it returns `undefined`. A lost lock is still returned: its `signal` has aborted.
 *
 * @example
 * \@Locked('order:#id')
 * async pay(id: string) {
 *   const lock = currentLock()!;
 *   await gateway.charge(id, { signal: lock.signal });
 * }
 * @publicApi
 */
export function currentLock(resource?: string): Lock | undefined {
  for (let f = storage.getStore(); f; f = f.parent) {
    if (!f.isOpen) continue; // its call has returned: work it left behind holds nothing
    for (const lock of f.locks) {
      // A released lock is not the chain's any more; a lost one is, so that its signal shows the loss.
      if (lock.releaseRequested && !lock.lostReason) continue;
      if (resource === undefined || lock.resources.includes(resource)) return lock;
    }
  }
  return undefined;
}
