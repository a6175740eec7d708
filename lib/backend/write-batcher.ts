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

/**
 * Calls that may ride with others of their loop turn in one script call (see {@link sendBatched}):
 * each has one key and three arguments. Says how to send one alone, and several as one script call.
 */
export interface BatchScript {
  /** One call as its own command (a batch of one, or a connection that cannot batch). */
  alone(master: Master, key: string, a: string, b: string, c: string): Promise<unknown>;
  /**
   * The batch: `keys[i]` with `args[3i..3i+2]`, in call order; the reply's entry i is what call i
   * alone would have answered (an Error for a call that failed).
   */
  together(master: Master, keys: string[], args: string[]): Promise<unknown[]>;
}

/** A batchable call waiting for its batch to leave. */
interface Deferred {
  readonly key: string;
  readonly a: string;
  readonly b: string;
  readonly c: string;
  readonly resolve: (reply: unknown) => void;
  readonly reject: (error: unknown) => void;
}

/** One connection's batch in the making. */
interface Batch {
  readonly stream: NonNullable<WritableConnection['stream']>;
  readonly connection: WritableConnection;
  /** Commands added to this batch (they sit in `commandQueue` too, written to the corked socket). */
  commands: number;
  /** Loop turns this batch has waited so far. */
  turns: number;
  /** Batchable calls not sent yet: they leave as one script call before anything else is written. */
  deferred: Deferred[] | undefined;
  /** The script of the deferred calls (one per batch: a call of another script sends these first). */
  script: BatchScript | undefined;
  readonly master: Master;
}

/** The open batch of each connection (one per connection, shared by every `Redlock` using it). */
const open = new WeakMap<object, Batch>();

/**
 * Batches the commands sent to `master` into one socket write; call it before each command. The
 * socket is corked on a batch's first command and uncorked:
 * - at `setImmediate` when few replies are pending on the connection: after the I/O callbacks of
 *   this loop turn, so the calls of requests that arrived together leave together, while a sequential
 *   caller waits for no other reply;
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
  const batch = batchOf(master);
  if (!batch) return;
  // Call order on the connection: the batchable calls made before this command leave before it.
  if (batch.deferred) sendDeferred(batch);
  batch.commands++;
}

/**
 * Sends a batchable call with the batch of `master`'s connection: the batchable calls of one loop turn
 * (of every caller) leave as one script call when the batch is written, in call order, and a command
 * sent in between (through {@link coalesceWrites}) sends those before it first. A batch of one call
 * sends that call's own command, so a sequential caller's traffic is unchanged; a connection that
 * cannot batch (not connected, not a socket of ours) sends it at once.
 *
 * @example
 * const reply = await sendBatched(master, PLAIN_BATCH, 'lock:orders', 'a', value, '10000');
 */
export function sendBatched(
  master: Master,
  script: BatchScript,
  key: string,
  a: string,
  b: string,
  c: string,
): Promise<unknown> {
  const batch = batchOf(master);
  if (!batch) return script.alone(master, key, a, b, c);
  if (batch.deferred && batch.script !== script) sendDeferred(batch);
  batch.script = script;
  return new Promise((resolve, reject) => (batch.deferred ??= []).push({ key, a, b, c, resolve, reject }));
}

/** The open batch of `master`'s connection, opened (the socket corked) when there is none. */
function batchOf(master: Master): Batch | undefined {
  const connection = master.client as unknown as WritableConnection | undefined;
  if (!connection) return undefined;
  const batch = open.get(connection);
  if (batch) return batch;
  const stream = connection.stream;
  if (!stream?.writable) return undefined;
  const started: Batch = { stream, connection, commands: 0, turns: 0, deferred: undefined, script: undefined, master };
  open.set(connection, started);
  stream.cork();
  if ((connection.commandQueue?.length ?? 0) >= BUSY_PENDING_REPLIES) setImmediate(flushWhenAnswered, started);
  else setImmediate(flush, started);
  return started;
}

/**
 * Calls per script call at most: a batch's arguments are spread into one function call (a few
 * hundred thousand overflow the stack), and one script call blocks its master while it runs.
 */
export const MAX_BATCH_CALLS = 1_000;

/** Writes the batch's deferred calls, in call order: the one call's own command, or script calls of at most MAX_BATCH_CALLS. */
function sendDeferred(batch: Batch): void {
  const deferred = batch.deferred!;
  const script = batch.script!;
  batch.deferred = undefined;
  for (let start = 0; start < deferred.length; start += MAX_BATCH_CALLS) {
    batch.commands++;
    const group = deferred.length <= MAX_BATCH_CALLS ? deferred : deferred.slice(start, start + MAX_BATCH_CALLS);
    sendGroup(batch.master, script, group);
  }
}

/** One command for `group`; a send that throws rejects its calls (the batch's socket is uncorked all the same). */
function sendGroup(master: Master, script: BatchScript, group: Deferred[]): void {
  let sent: Promise<unknown>;
  try {
    if (group.length === 1) {
      const { key, a, b, c } = group[0];
      sent = script.alone(master, key, a, b, c);
    } else {
      const keys: string[] = new Array(group.length);
      const args: string[] = new Array(group.length * 3);
      for (let i = 0; i < group.length; i++) {
        const d = group[i];
        keys[i] = d.key;
        args[3 * i] = d.a;
        args[3 * i + 1] = d.b;
        args[3 * i + 2] = d.c;
      }
      sent = script.together(master, keys, args);
    }
  } catch (error) {
    sent = Promise.reject(error);
  }
  sent.then(
    (reply) => {
      if (group.length === 1) return group[0].resolve(reply);
      const replies = reply as unknown[];
      for (let i = 0; i < group.length; i++) {
        const entry = replies[i];
        if (entry instanceof Error) group[i].reject(entry);
        else group[i].resolve(entry);
      }
    },
    (error: unknown) => {
      for (const d of group) d.reject(error);
    },
  );
}

function flush(batch: Batch): void {
  open.delete(batch.connection);
  if (batch.deferred) sendDeferred(batch);
  batch.stream.uncork();
}

/**
 * Runs once per loop turn after its I/O callbacks: sends the batch once every reply of the previous
 * write has come in (what remains queued is this batch's own commands), or after MAX_HOLD_TURNS turns.
 */
function flushWhenAnswered(batch: Batch): void {
  // The deferred calls are not in the queue yet: what it holds beyond this batch's commands is the previous write's.
  const previousUnanswered = (batch.connection.commandQueue?.length ?? 0) - batch.commands;
  if (previousUnanswered <= 0 || ++batch.turns >= MAX_HOLD_TURNS || !batch.stream.writable) flush(batch);
  else setImmediate(flushWhenAnswered, batch);
}
