import type { SubscriberConnection } from '../backend/master-connection.js';
import type { Master } from '../backend/master.js';
import { usesShardedPubSub } from '../backend/cluster/cluster-probe.js';
import { handoverChannelOf, releaseChannelFor } from '../kinds/channels.js';
import { now } from '../util/clock.js';

/** How long a key stays subscribed after its last waiter left, ms. */
const LINGER_MS = 2_000;

/**
 * Whether handovers heard from plain master `index` count (docs/handoff.md *Safety*): on a
 * connection that reached the server `runId`, they count only while the restart guard trusts that
 * master and has vetted that very server.
 */
export type HandoverVouch = (index: number, runId: string) => boolean;

/**
 * A release message heard for `key` from master `master` (undefined: from a cluster, whose
 * handovers are no evidence), arrived at that monotonic instant.
 */
export type ReleaseHeard = (key: string, message: string, master: number | undefined, arrived: number) => void;

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

/**
 * The release channels this process follows: one subscriber connection per master, opened on first
 * need and shared by all waiters. A key's channels (releases that free it, handovers to this
 * instance's waiters) are followed while someone waits for it, and a while after.
 */
export class ReleaseSubscribers {
  #subscribers: Subscriber[] | undefined;
  /** Keys nobody waits for any more, still subscribed for a while: a key contended again soon is already listened to. */
  readonly #lingering = new Map<string, NodeJS.Timeout>();
  /** Channels followed for another purpose than waking waiters (revocations.ts), with their handlers. */
  readonly #followed = new Map<string, (master: number, message: string) => void>();

  constructor(
    private readonly masters: readonly Master[],
    /** This instance's tag: the handover channel of its waiters. */
    private readonly tag: string,
    private readonly released: ReleaseHeard,
    private readonly vouch: HandoverVouch,
    private readonly unidentified: ((index: number) => void) | undefined,
  ) {}

  /**
   * Follows `key`'s channels on every master (`on`), or stops after a while. Following, resolves
   * once every master confirmed or failed: a release published before a master confirmed the
   * SUBSCRIBE is never delivered. Undefined when nothing was sent (still subscribed, or stopping).
   */
  listen(key: string, on: boolean): Promise<unknown> | undefined {
    const lingering = this.#lingering.get(key);
    if (lingering) {
      clearTimeout(lingering);
      this.#lingering.delete(key);
      if (on) return undefined; // still subscribed
    } else if (!on) {
      // A waiter that subscribes only when it starts waiting can miss a release that comes sooner
      // than the SUBSCRIBE: under steady contention the subscription stays.
      const timer = setTimeout(() => this.listen(key, false), LINGER_MS); // with the entry there: unsubscribes
      timer.unref();
      this.#lingering.set(key, timer);
      return undefined;
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
      return undefined;
    }
    return Promise.allSettled(confirmed);
  }

  /**
   * Follows `channel` (not a key's: a classic channel, the same on every master) on every master's
   * subscriber connection with `handler`, or stops following it (`handler` undefined). Resolves once
   * every master confirmed or failed.
   */
  follow(channel: string, handler: ((master: number, message: string) => void) | undefined): Promise<unknown> {
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

  /** Stops lingering and closes the subscriber connections. */
  close(): void {
    for (const timer of this.#lingering.values()) clearTimeout(timer);
    this.#lingering.clear();
    for (const sub of this.#subscribers ?? []) sub.client.disconnect();
    this.#subscribers = undefined;
    this.#followed.clear();
  }
}
