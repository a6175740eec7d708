import { Ticket, type TicketQueues } from './ticket.js';

/** The waiters of this process for one key, and what the releases of it have done so far. */
export interface KeyQueue {
  readonly tickets: Ticket[];
  /** The value whose release last woke a waiter, so that the N masters' N messages wake one. */
  lastValue: string | undefined;
  /** Handoff messages being counted: how many masters sent each so far. */
  readonly handedOver: Map<string, number>;
}

/** True when `a` comes after `b` in the masters' order (score, then id in byte order). */
function behind(a: Ticket, b: Ticket): boolean {
  return a.score > b.score || (a.score === b.score && a.remoteId > b.remoteId);
}

/**
 * This process's waiters, queued per key in the masters' order (arrival, then id), so that the
 * head of a key's queue is its waiter the masters hand the key to first.
 */
export class KeyQueues implements TicketQueues {
  readonly #queues = new Map<string, KeyQueue>();

  /** @param watch Told when a key gains its first waiter (`true`) and when its last one leaves (`false`). */
  constructor(private readonly watch: (key: string, on: boolean) => void) {}

  /** The queue of `key`, undefined when nobody here waits for it. */
  get(key: string): KeyQueue | undefined {
    return this.#queues.get(key);
  }

  /** True when some waiter is queued for one of the keys (a newcomer queues behind it). */
  isQueued(keys: readonly string[]): boolean {
    for (const key of keys) if (this.#queues.get(key)?.tickets.length) return true;
    return false;
  }

  /** True when `ticket` is first in the queue of one of its keys. */
  isHead(ticket: Ticket): boolean {
    for (const key of ticket.keys) if (this.#queues.get(key)?.tickets[0] === ticket) return true;
    return false;
  }

  /** A ticket's place in the queues (0 = first), the best over its keys. */
  positionOf(ticket: Ticket): number {
    let best = Infinity;
    for (const key of ticket.keys) {
      const at = this.#queues.get(key)?.tickets.indexOf(ticket) ?? -1;
      if (at >= 0 && at < best) best = at;
    }
    return best;
  }

  /** Queues a new waiter on the keys, in the masters' order. */
  join(keys: readonly string[], score: number, remoteId: string): Ticket {
    const ticket = new Ticket(this, keys, score, remoteId);
    for (const key of keys) {
      let queue = this.#queues.get(key);
      if (!queue) {
        queue = { tickets: [], lastValue: undefined, handedOver: new Map() };
        this.#queues.set(key, queue);
        this.watch(key, true);
      }
      let at = queue.tickets.length;
      while (at > 0 && behind(queue.tickets[at - 1], ticket)) at--;
      queue.tickets.splice(at, 0, ticket);
    }
    return ticket;
  }

  /** Removes a waiter; a key nobody waits for any more is no longer watched. */
  leave(ticket: Ticket): void {
    for (const key of ticket.keys) {
      const queue = this.#queues.get(key);
      if (!queue) continue;
      const at = queue.tickets.indexOf(ticket);
      if (at >= 0) queue.tickets.splice(at, 1);
      if (queue.tickets.length === 0) {
        this.#queues.delete(key);
        this.watch(key, false);
      } else if (at === 0 && ticket.hasPendingWake) {
        queue.tickets[0].wake(); // the head gave up with a wake-up it never used: pass it on
      }
    }
  }

  /** Forgets every waiter (they are rejected by the closing signal they wait on). */
  clear(): void {
    this.#queues.clear();
  }
}
