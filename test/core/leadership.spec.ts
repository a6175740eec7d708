/**
 * Leader election on real masters, in one process (several `Redlock` instances, each with its own
 * connections): terms, takeover after resign and close, loss when renewal cannot reach a quorum,
 * fencing tokens from term to term, no overlapping terms, refused options.
 * Child-process faults (SIGKILL, SIGSTOP of a leader) are in leadership-process.spec.ts.
 */
import { describe, expect, it } from '@jest/globals';
import { LockKeyError, LockLostError, RedlockConfigError, RedlockError, type Leadership } from '../../lib/index.js';
import {
  abortOf,
  now,
  resourceName,
  sleep,
  useMasters,
  valuesOn,
  waitFor,
  whilePaused,
  expectAbsentOnAll,
} from '../support/index.js';

/** Resolves with the monotonic time at which `leadership` becomes leader (or rejects after `timeoutMs`). */
async function leaderWithin(leadership: Leadership, timeoutMs: number): Promise<number> {
  const ok = await waitFor(() => leadership.isLeader, timeoutMs, 5);
  if (!ok) throw new Error(`${leadership.resource}: not leader within ${timeoutMs} ms`);
  return now();
}

/** Records every value `changes` emits. */
function record(leadership: Leadership): { values: boolean[]; completed: boolean } {
  const seen = { values: [] as boolean[], completed: false };
  leadership.changes.subscribe({ next: (v) => seen.values.push(v), complete: () => (seen.completed = true) });
  return seen;
}

describe('leadership (3 masters)', () => {
  const set = useMasters(3);

  it('wins a term, reports it on changes and signal, and resigns: signal aborts, keys released, changes complete', async () => {
    const redlock = await set.redlock();
    const resource = resourceName('lead');
    const leadership = redlock.lead(resource, { ttl: 1_000 });
    expect(leadership.signal.aborted).toBe(true); // standing by
    const seen = record(leadership);
    await leaderWithin(leadership, 2_000);
    const signal = leadership.signal;
    expect(signal.aborted).toBe(false);
    expect(leadership.terms).toBe(1);
    expect(leadership.fencingToken).toBeUndefined();
    expect((await valuesOn(set.clients, `lock:${resource}`)).filter(Boolean).length).toBeGreaterThanOrEqual(2);

    await sleep(1_200); // longer than the TTL: renewal keeps the term
    expect(leadership.isLeader).toBe(true);
    expect(leadership.signal).toBe(signal);

    await leadership.resign();
    expect(leadership.isLeader).toBe(false);
    expect(leadership.resigned).toBe(true);
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toBeInstanceOf(LockLostError);
    await expectAbsentOnAll(set.clients, `lock:${resource}`);
    expect(seen).toEqual({ values: [false, true, false], completed: true });
    await leadership.resign(); // idempotent
  });

  it('a standby takes over within a few round trips after the leader resigns (wake-up, not its retry delay)', async () => {
    const [a, b] = await Promise.all([set.redlock(), set.redlock()]);
    const resource = resourceName('handover');
    const leader = a.lead(resource, { ttl: 2_000 });
    await leaderWithin(leader, 2_000);
    const standby = b.lead(resource, { ttl: 2_000, retryDelay: 10_000 });
    await sleep(200); // its first attempt failed; it now sleeps on its 10 s fallback
    expect(standby.isLeader).toBe(false);

    const resigned = now();
    await leader.resign();
    const took = (await leaderWithin(standby, 5_000)) - resigned;
    expect(took).toBeLessThan(5_000); // half the retry delay: only the release's wake-up explains it
    console.log(`leadership takeover after resign (3 masters, in-process): ${took.toFixed(1)} ms`);
    await standby.resign();
  });

  it('close() resigns every leadership; a standby elsewhere takes over at once', async () => {
    const [a, b] = await Promise.all([set.redlock(), set.redlock()]);
    const resource = resourceName('close');
    const leader = a.lead(resource, { ttl: 2_000 });
    await leaderWithin(leader, 2_000);
    const signal = leader.signal;
    const standby = b.lead(resource, { ttl: 2_000, retryDelay: 10_000 });
    await sleep(200);

    const closing = now();
    await a.close();
    expect(leader.resigned).toBe(true);
    expect(signal.aborted).toBe(true);
    // Resigned by close() itself, before the held locks were marked lost by the shutdown.
    expect((signal.reason as LockLostError).reason).toBe('resigned');
    const took = (await leaderWithin(standby, 5_000)) - closing;
    expect(took).toBeLessThan(5_000);
    console.log(`leadership takeover after close() (3 masters, in-process): ${took.toFixed(1)} ms`);
    expect(() => a.lead(resource)).toThrow(RedlockError);
    await standby.resign();
  });

  it('a leader that cannot renew ends its term (signal aborts) before the lock can lapse, and campaigns again', async () => {
    const redlock = await set.redlock({ commandTimeout: 50 });
    const resource = resourceName('lose');
    const leadership = redlock.lead(resource, { ttl: 900, retryDelay: 100 });
    await leaderWithin(leadership, 2_000);
    const signal = leadership.signal;
    const aborted = await whilePaused(set.masters.slice(1), async () => {
      const abort = await abortOf(signal);
      // At the abort, the leader's key has not expired yet on the master still answering: the term
      // ended before anyone else could have won the lock.
      const pttl = await set.clients[0].pttl(`lock:${resource}`);
      expect(leadership.isLeader).toBe(false);
      return { ...abort, pttl };
    });
    expect(aborted.reason).toBeInstanceOf(LockLostError);
    expect(aborted.pttl).toBeGreaterThan(0);
    // Masters back: it wins a new term, with a new signal.
    await leaderWithin(leadership, 5_000);
    expect(leadership.terms).toBe(2);
    expect(leadership.signal).not.toBe(signal);
    expect(leadership.signal.aborted).toBe(false);
    await leadership.resign();
  });

  it('with fencing, terms carry strictly increasing tokens', async () => {
    const redlocks = await Promise.all([set.redlock(), set.redlock(), set.redlock()]);
    const resource = resourceName('fenced');
    const tokens: number[] = [];
    for (let round = 0; round < 6; round++) {
      const leadership = redlocks[round % 3].lead(resource, { ttl: 1_000, fencing: true });
      await leaderWithin(leadership, 2_000);
      tokens.push(leadership.fencingToken!);
      await leadership.resign();
      expect(leadership.fencingToken).toBeUndefined();
    }
    for (let i = 1; i < tokens.length; i++) expect(tokens[i]).toBeGreaterThan(tokens[i - 1]);
  });

  it('never two leaders: three campaigns with resigns, re-campaigns and a paused master have no overlapping terms', async () => {
    const redlocks = await Promise.all([0, 1, 2].map(() => set.redlock({ commandTimeout: 60 })));
    const resource = resourceName('overlap');
    const terms: { who: number; start: number; end?: number; token?: number }[] = [];
    const open = new Map<number, (typeof terms)[number]>();
    const campaign = (who: number): Leadership => {
      const leadership = redlocks[who].lead(resource, { ttl: 400, retryDelay: 40, fencing: true });
      leadership.changes.subscribe((leading) => {
        if (leading) {
          const term: (typeof terms)[number] = { who, start: now(), token: leadership.fencingToken };
          terms.push(term);
          open.set(who, term);
          // The abort of the term's signal is the end of the term as far as this leader knows.
          leadership.signal.addEventListener('abort', () => (term.end = now()), { once: true });
        }
      });
      return leadership;
    };
    const campaigns = [0, 1, 2].map(campaign);
    const until = now() + 6_000;
    let step = 0;
    while (now() < until) {
      step++;
      await sleep(150 + Math.random() * 150);
      const leader = campaigns.findIndex((c) => c.isLeader);
      if (step % 7 === 0) {
        await whilePaused([set.masters[step % 3]], () => sleep(300)); // a minority hangs for a while
      } else if (leader >= 0) {
        await campaigns[leader].resign();
        campaigns[leader] = campaign(leader);
      }
    }
    await Promise.all(campaigns.map((c) => c.resign()));
    expect(terms.length).toBeGreaterThanOrEqual(10);
    const sorted = [...terms].sort((x, y) => x.start - y.start);
    for (let i = 1; i < sorted.length; i++) {
      expect(sorted[i - 1].end).toBeDefined();
      expect(sorted[i].start).toBeGreaterThanOrEqual(sorted[i - 1].end!);
      expect(sorted[i].token!).toBeGreaterThan(sorted[i - 1].token!);
    }
  });

  it('refuses bad options with RedlockConfigError naming the option, and writes nothing', async () => {
    const redlock = await set.redlock();
    const cases: [unknown, string][] = [
      [{ ttl: 0 }, 'ttl'],
      [{ ttl: 1.5 }, 'ttl'],
      [{ retryDelay: -1 }, 'retryDelay'],
      [{ retryDelay: 'soon' }, 'retryDelay'],
      [{ retryDelay: 100, retryJitter: 200 }, 'retryJitter'],
      [{ fencing: 'yes' }, 'fencing'],
      [{ signal: {} }, 'signal'],
      ['fast', 'options'],
    ];
    for (const [options, option] of cases) {
      let error: unknown;
      try {
        redlock.lead('refused', options as never);
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(RedlockConfigError);
      expect((error as RedlockConfigError).option).toBe(option);
    }
    expect(() => redlock.lead('')).toThrow(LockKeyError);
    expect(() => redlock.lead('')).toThrow('`resource` must be a non-empty string'); // its argument's name
    expect(() => redlock.lead(['a', 'b'] as never)).toThrow(LockKeyError);
    expect(await valuesOn(set.clients, 'lock:refused')).toEqual([null, null, null]);
  });

  it('the signal option resigns; a Leadership is an async disposable', async () => {
    const redlock = await set.redlock();
    const resource = resourceName('dispose');
    const controller = new AbortController();
    const first = redlock.lead(resource, { signal: controller.signal });
    await leaderWithin(first, 2_000);
    controller.abort();
    await waitFor(() => first.resigned && !first.isLeader, 1_000);
    expect(first.resigned).toBe(true);
    await first.resign();
    {
      await using second = redlock.lead(resource);
      await leaderWithin(second, 2_000);
    }
    await expectAbsentOnAll(set.clients, `lock:${resource}`);
  });
});
