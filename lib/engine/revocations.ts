import type { Lock } from '../lock/lock.js';
import type { Master } from '../backend/master.js';
import { companionKeyOf } from '../backend/cluster/cluster-keys.js';
import type { Wakeups } from '../waiting/wakeups.js';

/**
 * The channel every revoke script publishes on (`value\nreason` per holder it removed), the same on
 * every master: a classic channel, so a cluster delivers it to any node's subscriber.
 */
export const REVOCATION_CHANNEL = '__quorum-lock__!revoked';

/** The tombstone hash of a lock key on a master (value -> reason of each holder revoked), in the key's slot. */
export function tombstoneKeyOf(master: Pick<Master, 'cluster'>, key: string): string {
  return companionKeyOf(master, key, ':revoked');
}

/** How long the revocation channel stays followed after the last lock held here ended, ms. */
const LINGER_MS = 2_000;

/**
 * How an instance hears that one of its locks was revoked (docs/owner-and-revoke.md). While it
 * holds locks, it follows the revocation channel on each master's subscriber connection (the one
 * wake-ups use): once per instance, never a command per acquisition. A message naming a held lock's
 * value makes it lost at once (`LockLostError`, reason `'revoked'`). A revocation published before
 * the channel was followed (a lock revoked right after the first acquisition) is found in the
 * masters' tombstones: once the channel is followed, the locks acquired before are checked there.
 */
export class Revocations {
  #following = false;
  /** Bumped whenever following starts or stops: a late confirmation of an earlier start is ignored. */
  #generation = 0;
  #linger: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(
    private readonly masters: readonly Master[],
    private readonly wakeups: Wakeups,
    /** The locks held now. */
    private readonly held: () => Iterable<Lock>,
    /** Called with a held lock whose value was revoked, and the revocation's reason. */
    private readonly revoked: (lock: Lock, reason: string) => void,
    /** False: no pub/sub (`wakeOnRelease: false`), so nothing is followed. */
    private readonly enabled: boolean,
    /** The per-master bound on a tombstone read, ms (`commandTimeout`). */
    private readonly timeoutMs: number,
  ) {}

  /** A lock is held now: follow the channel (once), or keep following it. */
  holding(): void {
    if (!this.enabled || this.#closed) return;
    clearTimeout(this.#linger);
    this.#linger = undefined;
    if (this.#following) return;
    this.#following = true;
    const generation = ++this.#generation;
    void this.wakeups
      .follow(REVOCATION_CHANNEL, (_, message) => this.heard(message))
      .then(() => {
        // Every lock held now was taken before the channel was surely followed (or just after: harmless).
        if (generation === this.#generation) void this.checkTombstones([...this.held()]);
      });
  }

  /** No lock is held any more: stop following after a while (a lock taken again soon finds it followed). */
  idle(): void {
    if (!this.#following || this.#linger || this.#closed) return;
    this.#linger = setTimeout(() => {
      this.#linger = undefined;
      this.#following = false;
      this.#generation++;
      void this.wakeups.follow(REVOCATION_CHANNEL, undefined);
    }, LINGER_MS);
    this.#linger.unref();
  }

  /** Stops (the subscriber connections close with the wake-ups). */
  close(): void {
    this.#closed = true;
    clearTimeout(this.#linger);
  }

  private heard(message: string): void {
    const cut = message.indexOf('\n');
    const value = cut < 0 ? message : message.slice(0, cut);
    const reason = cut < 0 ? '' : message.slice(cut + 1);
    for (const lock of this.held()) if (lock.value === value && lock.isHeld) this.revoked(lock, reason);
  }

  /**
   * The locks acquired before the channel was followed (and still held): a revocation of one of
   * them may have been published before anyone here listened, so ask each master's tombstones.
   */
  private async checkTombstones(locks: readonly Lock[]): Promise<void> {
    await Promise.all(
      locks.map(async (lock) => {
        const reason = await this.revokedWhy(lock, this.timeoutMs);
        if (reason !== undefined && lock.isHeld) this.revoked(lock, reason);
      }),
    );
  }

  /**
   * The reason `lock` was revoked with, as some master's tombstone records it, or undefined when no
   * master asked (`asking`, by index; answering within `timeoutMs`) recorded a revocation of it. Off the plain path: asked
   * only when a majority refused to extend a lock (so a lock revoked while its instance did not
   * listen is still lost as `'revoked'`), and for the locks taken before the channel was followed.
   */
  async revokedWhy(
    lock: Lock,
    timeoutMs: number,
    asking: (index: number) => boolean = () => true,
  ): Promise<string | undefined> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), timeoutMs)));
    const reasons = await Promise.all(
      this.masters
        .filter((_, i) => asking(i))
        .flatMap((m) =>
          lock.keys.map((key) =>
            Promise.race([
              (m.client.call('HGET', tombstoneKeyOf(m, key), lock.value) as Promise<string | null>).catch(
                (): string | null => null,
              ),
              late,
            ]),
          ),
        ),
    );
    clearTimeout(timer);
    return reasons.find((r: string | null): r is string => typeof r === 'string');
  }
}
