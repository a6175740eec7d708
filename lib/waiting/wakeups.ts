import type { Master } from '../backend/master.js';
import { now } from '../util/clock.js';
import { parseReleaseMessage } from '../kinds/mutex/handoff.js';
import { randomBytes } from 'node:crypto';
import { INSTANCE_TAG_LENGTH } from '../kinds/channels.js';
import { KeyQueues } from './key-queues.js';
import { RecentHandovers } from './recent-handovers.js';
import { ReleaseSubscribers, type HandoverVouch } from './release-subscribers.js';
import { wakeOnRelease } from './release-wakeup.js';
import type { Ticket } from './ticket.js';

export type { Ticket } from './ticket.js';

/**
 * Wake-up on release. Waiters queue per key, in arrival order (`key-queues.ts`). When the lock on a
 * key is released, the head of its queue is woken at once (`release-wakeup.ts`): directly when the
 * release happened in this process, and through Redis pub/sub when it happened in another (a release
 * that frees the key publishes on the key's channel; one that hands it to a queued waiter, on that
 * waiter's instance's handover channel; `release-subscribers.ts`).
 */
export class Wakeups {
  readonly #queues = new KeyQueues((key, on) => this.listen(key, on));
  readonly #handovers = new RecentHandovers();
  /** Undefined without pub/sub. */
  readonly #subscribers: ReleaseSubscribers | undefined;
  /** A majority of the masters: how many must hand a waiter the key before it is woken. */
  readonly #quorum: number;
  /**
   * This instance's tag: its waiters' ticket ids begin with it, and a release that hands a key to
   * one of them publishes on the handover channel of this tag, which only this instance follows.
   */
  readonly tag = randomBytes((INSTANCE_TAG_LENGTH * 3) / 4).toString('base64url');

  constructor(
    masters: readonly Master[],
    /** False: no pub/sub; only releases made in this process wake waiters. */
    subscribe: boolean,
    /** Whether a master's handover messages count now (by default they always do). */
    vouch: HandoverVouch = () => true,
    /** Told once per connection whose server could not be read: its handovers will not count. */
    unidentified?: (index: number) => void,
  ) {
    this.#quorum = Math.floor(masters.length / 2) + 1;
    this.#subscribers = subscribe
      ? new ReleaseSubscribers(
          masters,
          this.tag,
          (key, message, master, arrived) => this.released(key, message, master, arrived),
          vouch,
          unidentified,
        )
      : undefined;
  }

  /** True when some waiter of this process is queued for one of the keys (a newcomer queues behind it). */
  isQueued(keys: readonly string[]): boolean {
    return this.#queues.isQueued(keys);
  }

  /** Notes that a release of `key` handed it to a queued waiter (here, or seen in a release message). */
  sawHandover(key: string): void {
    this.#handovers.saw(key);
  }

  /**
   * True when a handover of `key` was seen within the last second: waiters are queued on the
   * masters, so a newcomer takes its ticket with its first attempt instead of a `SET NX` that a
   * handed key refuses anyway (docs/handoff.md §1).
   */
  contended(key: string): boolean {
    return this.#handovers.contended(key);
  }

  /**
   * Queues a new waiter on the keys, in the masters' order (arrival, then id), so that this
   * process's head is its waiter the masters hand the key to first.
   */
  join(keys: readonly string[], score = 0, remoteId = ''): Ticket {
    return this.#queues.join(keys, score, remoteId);
  }

  /**
   * A release was seen (here or through pub/sub): wake the head waiter once per released value; or,
   * when the message names the ticket the key was handed to (`value\nticket`), only that waiter.
   * `master` and `arrived` (monotonic ms): the master whose message this is, and when it arrived.
   */
  released(key: string, message: string, master?: number, arrived?: number): void {
    const queue = this.#queues.get(key);
    // A bare value names no ticket: with nobody here waiting for the key there is nothing to note or wake.
    if (!queue && !message.includes('\n')) return;
    const parsed = parseReleaseMessage(message);
    if (parsed.ticket !== undefined) this.sawHandover(key);
    if (!queue) return;
    wakeOnRelease(queue, message, parsed, master, arrived ?? now(), this.#quorum);
  }

  private listen(key: string, on: boolean): void {
    const confirmed = this.#subscribers?.listen(key, on);
    // A release published before a master confirmed the SUBSCRIBE is never delivered: a waiter that
    // queued (and took its ticket) meanwhile may already have been handed the key. Once every master
    // has answered, the head tries once more instead of sleeping on its fallback delay.
    if (confirmed) void confirmed.then(() => this.#queues.get(key)?.tickets[0]?.wake(true));
  }

  /**
   * Follows `channel` (not a key's: a classic channel, the same on every master) on every master's
   * subscriber connection with `handler`, or stops following it (`handler` undefined). Resolves once
   * every master confirmed or failed. Nothing happens without pub/sub (`wakeOnRelease: false`).
   */
  follow(channel: string, handler: ((master: number, message: string) => void) | undefined): Promise<unknown> {
    return this.#subscribers ? this.#subscribers.follow(channel, handler) : Promise.resolve();
  }

  /** Closes the subscriber connections (waiters are rejected by the closing signal they wait on). */
  close(): void {
    this.#subscribers?.close();
    this.#queues.clear();
  }
}
