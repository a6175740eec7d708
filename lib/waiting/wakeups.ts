import type { SubscriberConnection } from '../backend/master-connection.js';
import type { Master } from '../backend/master.js';
import { now } from '../util/clock.js';
import { abortableSleep } from './sleep.js';
import { parseReleaseMessage, type HandoverHeard } from '../kinds/mutex/handoff.js';
import { usesShardedPubSub } from '../backend/cluster/cluster-probe.js';
import { randomBytes } from 'node:crypto';
import { handoverChannelOf, INSTANCE_TAG_LENGTH, releaseChannelFor, releaseChannelOf } from '../kinds/channels.js';

export { releaseChannelOf };

/** True when `a` comes after `b` in the masters' order (score, then id in byte order). */
function behind(a: Ticket, b: Ticket): boolean {
  return a.score > b.score || (a.score === b.score && a.remoteId > b.remoteId);
}

/** How long a key stays subscribed after its last waiter left, ms. */
const LINGER_MS = 2_000;

/** How long a key counts as contended after a handover of it was last seen, ms. */
const CONTENDED_MS = 1_000;

/** How many contended keys are remembered at most (the oldest is forgotten first). */
const CONTENDED_KEYS = 1_024;

/**
 * How long a waiter that some master (not yet a majority) handed the key waits for the others
 * before it tries: a split handover is resolved by the waiters' attempts (docs/handoff.md §6).
 */
const PARTIAL_HANDOVER_MS = 10;

/**
 * Whether handovers heard from plain master `index` count (docs/handoff.md *Safety*): on a
 * connection that reached the server `runId`, they count only while the restart guard trusts that
 * master and has vetted that very server.
 */
export type HandoverVouch = (index: number, runId: string) => boolean;

/** One master's subscriber connection and the channels it follows. */
interface Subscriber {
  readonly client: SubscriberConnection;
  /** The lock key of each channel subscribed (channel names differ per node kind). */
  readonly keys: Map<string, string>;
  /** The channels subscribed with SSUBSCRIBE. */
  readonly sharded: Set<string>;
  /**
   * A plain master's: the `run_id` of the server the current connection reached, read on it before
   * it subscribed anything; undefined while disconnected or being read, '' when unreadable (its
   * handovers then never count).
   */
  server?: string;
  /** Bumped on each connect and disconnect: a late `INFO` reply of an earlier connection is ignored. */
  connection: number;
  /** Settles once a connection has read its server and subscribed `keys` (kept across quick reconnects). */
  subscribed: Promise<void>;
  /** Settles `subscribed`; undefined once it has settled. */
  subscribedNow?: () => void;
  /** Settles when the current connection closes: a command it carried is then never answered. */
  closed: Promise<void>;
  closedNow?: () => void;
}

interface KeyQueue {
  readonly tickets: Ticket[];
  /** The value whose release last woke a waiter, so that the N masters' N messages wake one. */
  lastValue: string | undefined;
  /** Handoff messages being counted: how many masters sent each so far. */
  readonly handedOver: Map<string, number>;
}

/**
 * One waiter's place in the queues of the keys it wants. It keeps its place across attempts, so
 * wake-ups go to waiters in arrival order (FIFO) instead of to whoever polls first.
 */
export class Ticket {
  #resume: (() => void) | undefined;
  #wokenEarly = false;
  #check = false;
  /** Direct handovers to this waiter's ticket heard so far: master index -> the latest one's master time and arrival. */
  readonly handedAt = new Map<number, HandoverHeard>();

  constructor(
    private readonly wakeups: Wakeups,
    readonly keys: readonly string[],
    /** The acquisition's arrival (wall-clock ms) and ticket id: the order of the masters' queues (docs/handoff.md). */
    readonly score = 0,
    readonly remoteId = '',
  ) {}

  /**
   * Sleeps until a release of one of the keys reaches this waiter, `ms` pass (the fallback, should
   * a message be lost), or a signal aborts (then rejects with its reason). Resolves to true when a
   * release woke it, false when the time ran out.
   */
  async wait(ms: number, ...signals: (AbortSignal | undefined)[]): Promise<boolean> {
    if (this.#wokenEarly) {
      this.#wokenEarly = false;
      await abortableSleep(0, signals);
      return true;
    }
    let woken = false;
    await abortableSleep(ms, signals, (wake) => {
      this.#resume = wake && (() => ((woken = true), wake()));
    });
    return woken;
  }

  /** This waiter's place in this process's queue (0 = first), the best over its keys. */
  get position(): number {
    return this.wakeups.positionOf(this);
  }

  /** True when this waiter is first in line for one of its keys. */
  get isHead(): boolean {
    return this.wakeups.isHead(this);
  }

  /**
   * Wakes the waiter now, or at its next `wait()` if it is busy with an attempt. A `check` is a
   * wake-up without a release seen (one may have been missed): it neither replaces a pending real
   * one nor counts as an attempt (`takeCheck`). @internal
   */
  wake(check = false): void {
    this.#check = check && !(this.#wokenEarly && !this.#check);
    if (this.#resume) this.#resume();
    else this.#wokenEarly = true;
  }

  /** True once after a wake-up that was only a check (see `wake`). @internal */
  takeCheck(): boolean {
    const check = this.#check;
    this.#check = false;
    return check;
  }

  /** True when a wake-up arrived while the waiter was busy and has not been used yet. @internal */
  get hasPendingWake(): boolean {
    return this.#wokenEarly;
  }

  /** Gives up the place in every queue. */
  leave(): void {
    this.wakeups.leave(this);
  }
}

/**
 * Wake-up on release. Waiters queue per key, in arrival order. When the lock on a key is released,
 * the head of its queue is woken at once: directly when the release happened in this process, and
 * through Redis pub/sub when it happened in another (a release that frees the key publishes on the
 * key's channel; one that hands it to a queued waiter, on that waiter's instance's handover channel).
 * One subscriber connection per master, opened on first need and shared by all waiters.
 */
export class Wakeups {
  readonly #queues = new Map<string, KeyQueue>();
  #subscribers: Subscriber[] | undefined;
  /** Keys nobody waits for any more, still subscribed for a while: a key contended again soon is already listened to. */
  readonly #lingering = new Map<string, NodeJS.Timeout>();
  /** When a handover of each key was last seen (monotonic ms), oldest first. */
  readonly #handedOverAt = new Map<string, number>();
  /**
   * This instance's tag: its waiters' ticket ids begin with it, and a release that hands a key to
   * one of them publishes on the handover channel of this tag, which only this instance follows.
   */
  readonly tag = randomBytes((INSTANCE_TAG_LENGTH * 3) / 4).toString('base64url');
  /** Channels followed for another purpose than waking waiters (revocations.ts), with their handlers. */
  readonly #followed = new Map<string, (master: number, message: string) => void>();

  constructor(
    private readonly masters: readonly Master[],
    /** False: no pub/sub; only releases made in this process wake waiters. */
    private readonly subscribe: boolean,
    /** Whether a master's handover messages count now (by default they always do). */
    private readonly vouch: HandoverVouch = () => true,
    /** Told once per connection whose server could not be read: its handovers will not count. */
    private readonly unidentified?: (index: number) => void,
  ) {}

  /** True when some waiter of this process is queued for one of the keys (a newcomer queues behind it). */
  isQueued(keys: readonly string[]): boolean {
    for (const key of keys) if (this.#queues.get(key)?.tickets.length) return true;
    return false;
  }

  /** Notes that a release of `key` handed it to a queued waiter (here, or seen in a release message). */
  sawHandover(key: string): void {
    this.#handedOverAt.delete(key);
    this.#handedOverAt.set(key, now());
    if (this.#handedOverAt.size > CONTENDED_KEYS) this.#handedOverAt.delete(this.#handedOverAt.keys().next().value!);
  }

  /**
   * True when a handover of `key` was seen within the last second: waiters are queued on the
   * masters, so a newcomer takes its ticket with its first attempt instead of a `SET NX` that a
   * handed key refuses anyway (docs/handoff.md §1).
   */
  contended(key: string): boolean {
    const at = this.#handedOverAt.get(key);
    return at !== undefined && now() - at < CONTENDED_MS;
  }

  /** True when `ticket` is first in the queue of one of its keys. @internal */
  isHead(ticket: Ticket): boolean {
    for (const key of ticket.keys) if (this.#queues.get(key)?.tickets[0] === ticket) return true;
    return false;
  }

  /** A ticket's place in this process's queues (0 = first), the best over its keys. @internal */
  positionOf(ticket: Ticket): number {
    let best = Infinity;
    for (const key of ticket.keys) {
      const at = this.#queues.get(key)?.tickets.indexOf(ticket) ?? -1;
      if (at >= 0 && at < best) best = at;
    }
    return best;
  }

  /**
   * Queues a new waiter on the keys, in the masters' order (arrival, then id), so that this
   * process's head is its waiter the masters hand the key to first.
   */
  join(keys: readonly string[], score = 0, remoteId = ''): Ticket {
    const ticket = new Ticket(this, keys, score, remoteId);
    for (const key of keys) {
      let queue = this.#queues.get(key);
      if (!queue) {
        queue = { tickets: [], lastValue: undefined, handedOver: new Map() };
        this.#queues.set(key, queue);
        this.listen(key, true);
      }
      let at = queue.tickets.length;
      while (at > 0 && behind(queue.tickets[at - 1], ticket)) at--;
      queue.tickets.splice(at, 0, ticket);
    }
    return ticket;
  }

  /** Removes a waiter; a key nobody waits for any more is no longer listened to. @internal */
  leave(ticket: Ticket): void {
    for (const key of ticket.keys) {
      const queue = this.#queues.get(key);
      if (!queue) continue;
      const at = queue.tickets.indexOf(ticket);
      if (at >= 0) queue.tickets.splice(at, 1);
      if (queue.tickets.length === 0) {
        this.#queues.delete(key);
        this.listen(key, false);
      } else if (at === 0 && ticket.hasPendingWake) {
        queue.tickets[0].wake(); // the head gave up with a wake-up it never used: pass it on
      }
    }
  }

  /**
   * A release was seen (here or through pub/sub): wake the head waiter once per released value; or,
   * when the message names the ticket the key was handed to (`value\nticket`), only that waiter.
   * `master` and `arrived` (monotonic ms): the master whose message this is, and when it arrived.
   */
  released(key: string, message: string, master?: number, arrived = now()): void {
    const { value, ticket, at } = parseReleaseMessage(message);
    if (ticket !== undefined) this.sawHandover(key);
    const queue = this.#queues.get(key);
    if (!queue) return;
    if (ticket === undefined) {
      if (queue.lastValue === message) return;
      queue.lastValue = message;
      queue.tickets[0]?.wake();
      return;
    }
    const named = queue.tickets.find((t) => t.remoteId === ticket);
    if (!named) return; // handed to a waiter of another process
    // A direct handover: this master set the waiter's value at that master time (docs/handoff.md §3).
    if (at !== undefined && master !== undefined && !(at <= (named.handedAt.get(master)?.at ?? -Infinity)))
      named.handedAt.set(master, { at, arrived });
    // Wake it once a majority of masters has handed it the key: woken by the first, its attempt
    // could reach a master that has not yet seen the release and split the vote.
    // Messages of several handoffs can interleave: count each one apart (a few at a time).
    const handoff = `${value}\n${ticket}`;
    if (queue.lastValue === handoff) return;
    const count = (queue.handedOver.get(handoff) ?? 0) + 1;
    queue.handedOver.set(handoff, count);
    if (queue.handedOver.size > 16) queue.handedOver.delete(queue.handedOver.keys().next().value!);
    if (count < Math.floor(this.masters.length / 2) + 1) {
      // Should no majority follow (a split handover), the waiter's attempt finds out and settles it.
      if (count === 1) setTimeout(() => queue.handedOver.has(handoff) && named.wake(true), PARTIAL_HANDOVER_MS).unref();
      return;
    }
    queue.handedOver.delete(handoff);
    queue.lastValue = handoff;
    named.wake();
  }

  private listen(key: string, on: boolean): void {
    if (!this.subscribe) return;
    const lingering = this.#lingering.get(key);
    if (lingering) {
      clearTimeout(lingering);
      this.#lingering.delete(key);
      if (on) return; // still subscribed
    } else if (!on) {
      // A waiter that subscribes only when it starts waiting can miss a release that comes sooner
      // than the SUBSCRIBE: under steady contention the subscription stays.
      const timer = setTimeout(() => this.listen(key, false), LINGER_MS); // with the entry there: unsubscribes
      timer.unref();
      this.#lingering.set(key, timer);
      return;
    }
    const subscribers = this.subscribers();
    const confirmed = this.masters.map((master, i) => {
      const sub = subscribers[i];
      const channel = releaseChannelFor(master, key);
      // Releases that free the key, and handovers to this instance's waiters.
      const channels = [channel, handoverChannelOf(channel, this.tag)];
      // Sharded on a Redis 7+ cluster (known once connect() read INFO); the choice made at
      // SSUBSCRIBE time is the one undone.
      const sharded = on ? master.cluster !== undefined && usesShardedPubSub(master.cluster) : sub.sharded.has(channel);
      for (const c of channels) {
        if (on) sub.keys.set(c, key);
        else sub.keys.delete(c);
        if (sharded && on) sub.sharded.add(c);
        else if (sharded) sub.sharded.delete(c);
      }
      if (sharded) return on ? sub.client.ssubscribe(...channels) : sub.client.sunsubscribe(...channels);
      if (master.cluster) return on ? sub.client.subscribe(...channels) : sub.client.unsubscribe(...channels);
      // A plain master's connection subscribes only once it has read its server (`identify`),
      // which then subscribes every key in `sub.keys`, this one included.
      if (sub.server === undefined) return sub.subscribed;
      const sent = on ? sub.client.subscribe(...channels) : sub.client.unsubscribe(...channels);
      return Promise.race([sent, sub.closed]);
    });
    if (!on) {
      for (const done of confirmed) done.catch(() => undefined);
      return;
    }
    // A release published before a master confirmed the SUBSCRIBE is never delivered: a waiter that
    // queued (and took its ticket) meanwhile may already have been handed the key. Once every master
    // has answered, the head tries once more instead of sleeping on its fallback delay.
    void Promise.allSettled(confirmed).then(() => this.#queues.get(key)?.tickets[0]?.wake(true));
  }

  /**
   * Follows `channel` (not a key's: a classic channel, the same on every master) on every master's
   * subscriber connection with `handler`, or stops following it (`handler` undefined). Resolves once
   * every master confirmed or failed. Nothing happens without pub/sub (`wakeOnRelease: false`).
   */
  follow(channel: string, handler: ((master: number, message: string) => void) | undefined): Promise<unknown> {
    if (!this.subscribe) return Promise.resolve();
    if (handler) this.#followed.set(channel, handler);
    else this.#followed.delete(channel);
    const subscribers = this.subscribers();
    return Promise.allSettled(
      this.masters.map((master, i) => {
        const sub = subscribers[i];
        if (handler) sub.keys.set(channel, '');
        else sub.keys.delete(channel);
        if (master.cluster) return handler ? sub.client.subscribe(channel) : sub.client.unsubscribe(channel);
        if (sub.server === undefined) return sub.subscribed; // `identify` subscribes it with the keys
        const sent = handler ? sub.client.subscribe(channel) : sub.client.unsubscribe(channel);
        return Promise.race([sent, sub.closed]);
      }),
    );
  }

  private subscribers(): Subscriber[] {
    if (!this.#subscribers) {
      this.#subscribers = this.masters.map((m, index) => {
        // A cluster's subscriber is a cluster too: a classic PUBLISH reaches every node, so any node
        // will do; sharded channels are followed to the shard serving their slot.
        const client = m.cluster
          ? (m.cluster.duplicate([], {
              lazyConnect: false,
              enableOfflineQueue: true,
              shardedSubscribers: true,
            }) as unknown as SubscriberConnection)
          : m.client.duplicate({
              // Nothing may reach a fresh connection before its INFO (RESP2 refuses INFO once
              // subscribed): no automatic resubscription, no resent or queued commands.
              autoResubscribe: false,
              autoResendUnfulfilledCommands: false,
              enableOfflineQueue: false,
              enableAutoPipelining: false,
              lazyConnect: false,
              maxRetriesPerRequest: null,
            });
        const sub: Subscriber = {
          client,
          keys: new Map(),
          sharded: new Set(),
          connection: 0,
          subscribed: Promise.resolve(),
          closed: Promise.resolve(),
        };
        client.on('error', () => undefined); // a lost message costs one fallback delay, nothing more
        const heard = (channel: string, value: string): void => this.heard(sub, index, channel, value, now());
        client.on('message', heard);
        client.on('smessage', heard);
        if (!m.cluster) {
          this.unsubscribed(sub);
          client.on('ready', () => this.identify(sub, index));
          client.on('close', () => this.unsubscribed(sub));
        }
        return sub;
      });
    }
    return this.#subscribers;
  }

  /**
   * A message on a subscriber connection. A handover (it names a ticket) from a plain master counts
   * like a vote: only from a server the restart guard has vetted and trusts, the one this connection
   * reached. A cluster's subscriber follows several shards, so its handovers are never evidence:
   * they only wake the waiter, whose next attempt is vetted shard by shard as any vote. A release
   * that frees the key only wakes a waiter too.
   */
  private heard(sub: Subscriber, index: number, channel: string, message: string, arrived: number): void {
    const followed = this.#followed.get(channel);
    if (followed) return followed(index, message);
    const key = sub.keys.get(channel);
    if (key === undefined) return;
    if (!message.includes('\n')) return this.released(key, message, index, arrived);
    if (this.masters[index].cluster) return this.released(key, message, undefined, arrived);
    // `server` is known before this connection subscribed anything (`identify`).
    if (sub.server === undefined || !this.vouch(index, sub.server)) return;
    this.released(key, message, index, arrived);
  }

  /** A plain master's subscriber connection closed (or is not open yet): nothing is subscribed on the next one. */
  private unsubscribed(sub: Subscriber): void {
    sub.connection++;
    sub.server = undefined;
    sub.closedNow?.();
    // Awaiters of an earlier connection's subscription keep waiting for the next one's.
    if (!sub.subscribedNow) sub.subscribed = new Promise((resolve) => (sub.subscribedNow = resolve));
  }

  /**
   * The subscriber connection of plain master `index` is (again) ready: it reads which server it
   * reached with an `INFO` before anything else is sent on it, then subscribes the keys waited for,
   * so every message it delivers is known to come from that server. RESP2 refuses `INFO` on a
   * subscribed connection, hence this order and no automatic resubscription.
   */
  private identify(sub: Subscriber, index: number): void {
    const connection = ++sub.connection;
    sub.server = undefined;
    sub.closed = new Promise((resolve) => (sub.closedNow = resolve));
    const done = (server: string): void => {
      if (connection !== sub.connection) return; // that connection is gone: the next one reads its own
      sub.server = server;
      if (server === '') this.unidentified?.(index);
      const channels = [...sub.keys.keys()];
      const sent = channels.length > 0 ? sub.client.subscribe(...channels) : Promise.resolve();
      void Promise.race([sent, sub.closed])
        .catch(() => undefined)
        .then(() => {
          if (connection !== sub.connection) return;
          const settle = sub.subscribedNow;
          sub.subscribedNow = undefined;
          settle?.();
        });
    };
    sub.client.info('server').then(
      (info) => done(/^run_id:(\S+)/m.exec(info)?.[1] ?? ''),
      () => done(''), // unreadable (an ACL without INFO): its handovers never count, attempts find the key
    );
  }

  /** Closes the subscriber connections (waiters are rejected by the closing signal they wait on). */
  close(): void {
    for (const timer of this.#lingering.values()) clearTimeout(timer);
    this.#lingering.clear();
    for (const sub of this.#subscribers ?? []) sub.client.disconnect();
    this.#subscribers = undefined;
    this.#queues.clear();
    this.#followed.clear();
  }
}
