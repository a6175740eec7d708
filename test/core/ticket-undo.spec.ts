/**
 * The undo of a failed ticketed attempt (docs/handoff.md) on a real master: it deletes the key the
 * attempt wrote and leaves only a key that a release handed over, even when the waiter's ticket has
 * left the queue for another reason (its lease lapsed while the waiter was stalled, and another
 * waiter's script pruned it). A direct waiter's attempt says which it was in its own reply.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import { SCRIPTS } from '../../lib/lua/scripts.generated.js';
import { handoffKeysOf, ticketed, undoTicketed } from '../../lib/kinds/mutex/handoff.js';
import type { HandoffTicket } from '../../lib/kinds/acquire-request.js';
import { openMasters, type Master } from '../../lib/backend/master.js';
import { sleep, useMasters, waitFor } from '../support/index.js';

describe("a failed ticketed attempt's undo", () => {
  const set = useMasters(1);
  const opened: Master[] = [];
  afterAll(() => {
    for (const m of opened) m.client.disconnect();
  });
  const master = async (): Promise<Master> => {
    const [m] = openMasters(set.urls);
    opened.push(m);
    if (m.client.status === 'wait') await m.client.connect();
    expect(await waitFor(() => m.client.status === 'ready')).toBe(true);
    return m;
  };
  const ticket = (id: string, lease: number): HandoffTicket => ({ id, score: Date.now(), lease, claim: 500 });
  const attempt = (m: Master, key: string, value: string, t: HandoffTicket, counter?: string) =>
    ticketed.send(m, { keys: [key], counters: counter ? [counter] : undefined, value, ttl: 5_000, ticket: t });

  it("deletes a fenced waiter's key after its lapsed ticket was pruned from the queue (nothing can hand a fenced waiter its value)", async () => {
    const m = await master();
    const key = 'lock:undo-fenced';
    const waiter = ticket('waiter-a', 60);
    // The fenced waiter's attempt finds the key free and takes it (it is the claimant: nobody queued).
    expect(await attempt(m, key, 'value-a', waiter, 'fence:undo-fenced')).toEqual([1, 0, expect.any(Number), 0]);
    // Its client stalls past the ticket's lease; another waiter's attempt prunes the lapsed ticket.
    await sleep(150);
    const other = await attempt(m, key, 'value-b', ticket('waiter-b', 1_000), 'fence:undo-fenced');
    expect((other as unknown[])[0]).toBe(0);
    expect(await set.clients[0].zscore(handoffKeysOf(key)[1], 'waiter-a')).toBeNull();
    // The stalled waiter's attempt failed elsewhere: its undo must remove what it wrote.
    await undoTicketed(m, key, 'value-a', waiter);
    expect(await set.clients[0].get(key)).toBeNull();
  });

  /** Runs another waiter's attempts until one of them has pruned `id`'s lapsed ticket from the queue. */
  const prunedBy = (m: Master, key: string, id: string, value: string) =>
    waitFor(async () => {
      await attempt(m, key, value, ticket(`${id}-pruner`, 1_000));
      return (await set.clients[0].zscore(handoffKeysOf(key)[1], id)) === null;
    }, 5_000);

  it("deletes a direct waiter's key its own attempt wrote, after its lapsed ticket was pruned from the queue", async () => {
    const m = await master();
    const key = 'lock:undo-direct';
    const waiter: HandoffTicket = { ...ticket('waiter-d', 60), handover: { value: 'value-d', ttl: 5_000 } };
    // The direct waiter's attempt finds the key free and takes it itself: its reply says so (handed 0).
    const reply = await attempt(m, key, 'value-d', waiter);
    expect(reply).toEqual([1, 0, expect.any(Number), 0]);
    // Its client stalls past the ticket's lease; another waiter's attempt prunes the lapsed ticket.
    expect(await prunedBy(m, key, 'waiter-d ' + '5000 value-d', 'value-e')).toBe(true);
    // The stalled waiter's attempt failed elsewhere: what it wrote goes, or it holds the key back a TTL.
    await undoTicketed(m, key, 'value-d', waiter, reply);
    expect(await set.clients[0].get(key)).toBeNull();
  });

  it("leaves a direct waiter's key a release handed over again after its own write lapsed", async () => {
    const m = await master();
    const key = 'lock:undo-rehanded';
    const waiter: HandoffTicket = { ...ticket('waiter-f', 5_000), handover: { value: 'value-f', ttl: 5_000 } };
    // Its own write (a short TTL) lapses while the ticket stays queued...
    const reply = await ticketed.send(m, {
      keys: [key],
      counters: undefined,
      value: 'value-f',
      ttl: 50,
      ticket: waiter,
    });
    expect(reply).toEqual([1, 0, expect.any(Number), 0]);
    expect(await waitFor(async () => (await set.clients[0].exists(key)) === 0)).toBe(true);
    // ...a newcomer takes the free key and its release hands it to the queued ticket: the same value.
    await set.clients[0].set(key, 'holder', 'PX', 5_000);
    const released = await set.clients[0].eval(
      SCRIPTS.handoffRelease.lua,
      4,
      ...handoffKeysOf(key),
      'holder',
      '1',
      'ch',
      '500',
    );
    expect(released).toBe(2);
    expect(await set.clients[0].get(key)).toBe('value-f');
    // The late undo of the first attempt must not delete what the release handed over.
    await undoTicketed(m, key, 'value-f', waiter, reply);
    expect(await set.clients[0].get(key)).toBe('value-f');
  });

  it("deletes a direct waiter's key its own attempt wrote after an earlier handover of that value there had ended", async () => {
    const m = await master();
    const key = 'lock:undo-stale-handover';
    // A short handover TTL, so that the handed key ends while the waiter still waits.
    const waiter: HandoffTicket = { ...ticket('waiter-g', 60), handover: { value: 'value-g', ttl: 100 } };
    await set.clients[0].set(key, 'holder', 'PX', 5_000);
    expect(((await attempt(m, key, 'value-g', waiter)) as unknown[])[0]).toBe(0); // queued behind the holder
    const released = await set.clients[0].eval(
      SCRIPTS.handoffRelease.lua,
      4,
      ...handoffKeysOf(key),
      'holder',
      '1',
      'ch',
      '500',
    );
    expect(released).toBe(2);
    // The handed key lives out its TTL (the waiter could not count it)...
    expect(await waitFor(async () => (await set.clients[0].exists(key)) === 0)).toBe(true);
    // ...then the waiter's next attempt finds the key free and writes the value itself.
    const reply = await attempt(m, key, 'value-g', waiter);
    expect(reply).toEqual([1, 0, expect.any(Number), 0]);
    // Its client stalls past the ticket's lease; another waiter's attempt prunes the lapsed ticket.
    expect(await prunedBy(m, key, 'waiter-g ' + '100 value-g', 'value-h')).toBe(true);
    // The attempt failed elsewhere: no release handed the value over since it wrote it, so it goes.
    await undoTicketed(m, key, 'value-g', waiter, reply);
    expect(await set.clients[0].get(key)).toBeNull();
  });

  it("still leaves a key a release handed to a direct (unfenced) waiter's ticket", async () => {
    const m = await master();
    const key = 'lock:undo-handed';
    await set.clients[0].set(key, 'holder', 'PX', 5_000);
    const waiter: HandoffTicket = { ...ticket('waiter-c', 2_000), handover: { value: 'value-c', ttl: 5_000 } };
    expect(((await attempt(m, key, 'value-c', waiter)) as unknown[])[0]).toBe(0); // queued behind the holder
    // The holder's release hands the key to the queued ticket.
    const release = await set.clients[0].eval(
      SCRIPTS.handoffRelease.lua,
      4,
      ...handoffKeysOf(key),
      'holder',
      '1',
      'release-channel',
      '500',
    );
    expect(release).toBe(2);
    expect(await waitFor(async () => (await set.clients[0].get(key)) === 'value-c')).toBe(true);
    await undoTicketed(m, key, 'value-c', waiter);
    expect(await set.clients[0].get(key)).toBe('value-c');
  });
});
