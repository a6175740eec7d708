import { describe, expect, it } from '@jest/globals';
import type { Master } from '../../lib/backend/master.js';
import { voteRound } from '../../lib/quorum/vote-round.js';
import { MAX_HOLD_TURNS } from '../../lib/backend/write-batcher.js';
import { describeOutcomes, quorumOf } from '../../lib/errors/outcomes.js';

/** Fake masters: only the label is read by voteRound; `send` is supplied by each test. */
const mastersOf = (n: number): Master[] =>
  Array.from({ length: n }, (_, i) => ({ label: `m${i}:6379` }) as unknown as Master);
const never = (): Promise<unknown> => new Promise(() => undefined);
const isOne = (reply: unknown): boolean => reply === 1;

describe('quorumOf', () => {
  it.each([
    [1, 1],
    [2, 2],
    [3, 2],
    [4, 3],
    [5, 3],
    [6, 4],
    [7, 4],
  ])('N=%i needs %i', (n, quorum) => {
    expect(quorumOf(n)).toBe(quorum);
  });
});

describe('voteRound', () => {
  it('decides true as soon as a quorum granted, without waiting for hung masters', async () => {
    const masters = mastersOf(5);
    const round = voteRound(
      masters,
      3,
      1_000,
      (m) => (['m3:6379', 'm4:6379'].includes(m.label) ? never() : Promise.resolve(1)),
      isOne,
    );
    expect(await round.decided).toBe(true);
    // Decided while the hung masters were still unanswered (not even timed out yet).
    expect(round.outcomes.map((o) => o?.status)).toEqual(['granted', 'granted', 'granted', undefined, undefined]);
  });

  it('decides false as soon as a blocking minority refused, without waiting for the rest', async () => {
    const round = voteRound(
      mastersOf(3),
      2,
      1_000,
      (m) => (m.label === 'm2:6379' ? never() : Promise.resolve(0)),
      isOne,
    );
    expect(await round.decided).toBe(false);
    expect(round.outcomes.map((o) => o?.status)).toEqual(['refused', 'refused', undefined]);
  });

  it('counts masters that have not answered within the timeout as timeouts, then settles', async () => {
    const round = voteRound(mastersOf(3), 2, 30, (m) => (m.label === 'm0:6379' ? Promise.resolve(1) : never()), isOne);
    expect(await round.decided).toBe(false);
    await round.settled;
    expect(round.outcomes).toEqual([
      { master: 'm0:6379', status: 'granted' },
      { master: 'm1:6379', status: 'timeout' },
      { master: 'm2:6379', status: 'timeout' },
    ]);
  });

  it('records rejections and synchronous throws as errors, wrapping non-Error reasons', async () => {
    const boom = new Error('connection refused');
    const round = voteRound(
      mastersOf(3),
      2,
      1_000,
      (m) => {
        if (m.label === 'm0:6379') return Promise.reject(boom);
        if (m.label === 'm1:6379') throw new Error('sync failure');
        return Promise.reject('a string');
      },
      isOne,
    );
    expect(await round.decided).toBe(false);
    await round.settled;
    expect(round.outcomes.map((o) => o?.status)).toEqual(['error', 'error', 'error']);
    expect(round.outcomes[0]?.error).toBe(boom);
    expect(round.outcomes[1]?.error?.message).toBe('sync failure');
    expect(round.outcomes[2]?.error).toBeInstanceOf(Error);
    expect(round.outcomes[2]?.error?.message).toBe('a string');
  });

  it('ignores an answer that arrives after its master was counted as a timeout', async () => {
    let late!: (v: unknown) => void;
    const round = voteRound(mastersOf(1), 1, 20, () => new Promise((resolve) => (late = resolve)), isOne);
    expect(await round.decided).toBe(false);
    late(1);
    await new Promise((r) => setTimeout(r, 10));
    expect(round.outcomes).toEqual([{ master: 'm0:6379', status: 'timeout' }]);
  });

  it('describeOutcomes tallies each status with the first error message', () => {
    const text = describeOutcomes(
      [
        { master: 'a', status: 'granted' },
        { master: 'b', status: 'refused' },
        { master: 'c', status: 'error', error: new Error('ECONNREFUSED') },
        { master: 'd', status: 'timeout' },
        undefined,
      ],
      'held by another holder',
    );
    expect(text).toBe('1 granted, 1 held by another holder, 1 failed (ECONNREFUSED), 1 timed out, 1 still pending');
  });
});

describe('coalesceWrites', () => {
  it('corks each master socket once per loop turn, so all rounds sent in one turn leave in one write', async () => {
    const calls: string[] = [];
    const stream = { writable: true, cork: () => calls.push('cork'), uncork: () => calls.push('uncork') };
    const master = { label: 'm0:6379', client: { stream } } as unknown as Master;
    for (let i = 0; i < 3; i++)
      voteRound(
        [master],
        1,
        1_000,
        () => Promise.resolve(1),
        (r) => r === 1,
      );
    expect(calls).toEqual(['cork']);
    // Still corked after this callback: another socket's callback of the same poll phase joins the write.
    await new Promise((resolve) => process.nextTick(resolve));
    expect(calls).toEqual(['cork']);
    await new Promise((resolve) => setImmediate(resolve));
    expect(calls).toEqual(['cork', 'uncork']);
    voteRound(
      [master],
      1,
      1_000,
      () => Promise.resolve(1),
      (r) => r === 1,
    );
    expect(calls).toEqual(['cork', 'uncork', 'cork']);
    await new Promise((resolve) => setImmediate(resolve));
  });

  /**
   * A fake ioredis connection: `send` queues its command like ioredis does (written to the corked
   * socket, awaiting its reply); `answer(n)` takes the n oldest replies off the queue.
   */
  const busyMaster = (label: string, unanswered: number) => {
    const calls: string[] = [];
    const stream = { writable: true, cork: () => calls.push('cork'), uncork: () => calls.push('uncork') };
    const commandQueue = { length: unanswered };
    const master = { label, client: { stream, commandQueue } } as unknown as Master;
    const round = () =>
      voteRound(
        [master],
        1,
        1_000,
        () => {
          commandQueue.length++;
          return Promise.resolve(1);
        },
        (r) => r === 1,
      );
    return { master, calls, round, answer: (n: number) => (commandQueue.length -= n) };
  };
  const loopTurn = () => new Promise((resolve) => setImmediate(resolve));

  it("holds a busy connection's write while its previous write's replies are outstanding, then sends it in the turn they arrive", async () => {
    const m = busyMaster('m0:6379', 8);
    m.round();
    await new Promise((resolve) => process.nextTick(resolve));
    // A reply from another socket in the same poll phase would send its command now: still corked.
    m.round();
    expect(m.calls).toEqual(['cork']);
    await loopTurn();
    // The previous write's 8 replies are not in: the 2 new commands wait for them.
    m.round();
    expect(m.calls).toEqual(['cork']);
    m.answer(8);
    await loopTurn();
    expect(m.calls).toEqual(['cork', 'uncork']);
  });

  it(`sends a busy connection's write after ${MAX_HOLD_TURNS} loop turns when its previous replies never come`, async () => {
    const m = busyMaster('m0:6379', 8);
    m.round();
    for (let turn = 1; turn < MAX_HOLD_TURNS; turn++) {
      await loopTurn();
      expect(m.calls).toEqual(['cork']);
    }
    await loopTurn();
    expect(m.calls).toEqual(['cork', 'uncork']);
  });

  it('holds each connection on its own replies only: a master that does not answer holds no other master', async () => {
    const silent = busyMaster('m0:6379', 8);
    const answering = busyMaster('m1:6379', 8);
    const idle = busyMaster('m2:6379', 0);
    for (const m of [silent, answering, idle]) m.round();
    await loopTurn();
    expect(idle.calls).toEqual(['cork', 'uncork']);
    answering.answer(8);
    await loopTurn();
    expect(answering.calls).toEqual(['cork', 'uncork']);
    expect(silent.calls).toEqual(['cork']);
  });

  it('still writes in the same loop turn when only a sequential caller is waiting for replies', async () => {
    const calls: string[] = [];
    const stream = { writable: true, cork: () => calls.push('cork'), uncork: () => calls.push('uncork') };
    const master = {
      label: 'm0:6379',
      client: { stream, commandQueue: { length: 2 } },
    } as unknown as Master;
    voteRound(
      [master],
      1,
      1_000,
      () => Promise.resolve(1),
      (r) => r === 1,
    );
    await new Promise((resolve) => setImmediate(resolve));
    expect(calls).toEqual(['cork', 'uncork']);
  });

  it('leaves a socket that is not writable alone', () => {
    const calls: string[] = [];
    const stream = { writable: false, cork: () => calls.push('cork'), uncork: () => calls.push('uncork') };
    const master = { label: 'm0:6379', client: { stream } } as unknown as Master;
    voteRound(
      [master],
      1,
      1_000,
      () => Promise.resolve(1),
      (r) => r === 1,
    );
    expect(calls).toEqual([]);
  });
});
