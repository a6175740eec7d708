import type { Master } from './master.js';

/**
 * Replies outstanding on a connection from which it counts as busy. A sequential caller leaves at most
 * its previous acquire and release (and a renewal) outstanding on a slow master: it stays below this.
 */
export const BUSY_PENDING_REPLIES = 4;

/**
 * Loop turns a busy connection's writes may wait for the replies of its previous write. Past this the
 * batch leaves anyway, so a master that stopped answering delays its own next write by at most this
 * many turns, and never anyone else's.
 */
export const MAX_HOLD_TURNS = 3;

/** The ioredis internals the hold reads: the socket, and the commands written and not yet answered. */
interface WritableConnection {
  stream?: { cork(): void; uncork(): void; writable?: boolean };
  commandQueue?: { length: number };
}

/** One connection's batch in the making. */
interface Batch {
  readonly stream: NonNullable<WritableConnection['stream']>;
  readonly connection: WritableConnection;
  /** Commands added to this batch (they sit in `commandQueue` too, written to the corked socket). */
  commands: number;
  /** Loop turns this batch has waited so far. */
  turns: number;
}

/** The open batch of each connection (one per connection, shared by every `Redlock` using it). */
const open = new WeakMap<object, Batch>();

/**
 * Batches the commands sent to `master` into one socket write; call it before each command. The
 * socket is corked on a batch's first command and uncorked:
 * - on `process.nextTick` when few replies are pending on the connection, so a sequential caller
 *   pays no wait;
 * - while the connection is busy, in the loop turn where the replies of its previous write have all
 *   come in (at `setImmediate`, after that turn's I/O callbacks added their commands), as ioredis
 *   auto-pipelining keeps one pipeline in flight; at the latest after {@link MAX_HOLD_TURNS} turns.
 * Each connection is held on its own replies only: a slow master never holds another master's
 * writes. Commands keep their call order on the connection (the socket is only corked).
 *
 * @example
 * coalesceWrites(master);
 * const reply = master.scripts.acquire(key, value, ttl);
 */
export function coalesceWrites(master: Master): void {
  const connection = master.client as unknown as WritableConnection | undefined;
  if (!connection) return;
  const batch = open.get(connection);
  if (batch) {
    batch.commands++;
    return;
  }
  const stream = connection.stream;
  if (!stream?.writable) return;
  const started: Batch = { stream, connection, commands: 1, turns: 0 };
  open.set(connection, started);
  stream.cork();
  if ((connection.commandQueue?.length ?? 0) >= BUSY_PENDING_REPLIES) setImmediate(flushWhenAnswered, started);
  else process.nextTick(flush, started);
}

function flush(batch: Batch): void {
  open.delete(batch.connection);
  batch.stream.uncork();
}

/**
 * Runs once per loop turn after its I/O callbacks: sends the batch once every reply of the previous
 * write has come in (what remains queued is this batch's own commands), or after MAX_HOLD_TURNS turns.
 */
function flushWhenAnswered(batch: Batch): void {
  const previousUnanswered = (batch.connection.commandQueue?.length ?? 0) - batch.commands;
  if (previousUnanswered <= 0 || ++batch.turns >= MAX_HOLD_TURNS || !batch.stream.writable) flush(batch);
  else setImmediate(flushWhenAnswered, batch);
}
