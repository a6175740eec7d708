/**
 * `onBusy: 'skip'` and split votes (issue 12): when several instances fire the same job at the same
 * instant, their `SET NX` votes can split (each wins one master, or a master times out while two
 * of them split the others), so that nobody wins a quorum. A split is not "someone else holds it":
 * the instances that won a vote release it and retry after a short random delay, and only a
 * refusal with no vote of ours skips. Every fire then runs exactly once. On real masters, three
 * Redlock instances, each with its own connections.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import { ProxyFarm } from '../../chaos/proxy.js';
import { LockAcquisitionError, type Redlock } from '../../lib/index.js';
import { resourceName, sleep, useMasters } from '../support/index.js';

const set = useMasters(3);
let farm: ProxyFarm | undefined;
afterAll(async () => {
  await farm?.close();
});

/**
 * Latency skew per (instance, master) pair, each way: instance k reaches master k first, the others
 * SKEW and 2 × SKEW ms later. Instances that start together then each win "their" master: a
 * three-way split on every simultaneous fire, as with instances in different zones.
 */
const SKEW = 3;

/** A cron-like hold: the fire keeps its lock for MIN_HOLD ms, well within TTL. */
const TTL = 900;
const MIN_HOLD = 700;
const FIRES = 30;

describe("onBusy: 'skip' under simultaneous fires (split votes)", () => {
  it('every one of 30 simultaneous fires of three instances runs exactly once', async () => {
    farm = ProxyFarm.create(set.masters.map((m) => m.port));
    const instances: Redlock[] = [];
    for (let k = 0; k < 3; k++) {
      const id = `instance-${k}`;
      const nodes = await farm.nodesFor(id);
      for (let j = 0; j < 3; j++) farm.proxies[j].setFault(id, { kind: 'delay', ms: ((j - k + 3) % 3) * SKEW });
      // commandTimeout 300 (a third of the TTL): the proxies' skew makes the splits; a stall of this
      // process in a full suite run kept 100 ms answers from being read for longer than the tries.
      instances.push(await set.redlock({ nodes, commandTimeout: 300, retryDelay: 20, retryJitter: 10 }));
    }
    const errors: unknown[] = [];
    const runsPerFire: number[] = [];
    for (let fire = 0; fire < FIRES; fire++) {
      const resource = resourceName(`fire-${fire}`);
      let runs = 0;
      // All three at the same instant.
      const calls = [0, 1, 2].map((k) =>
        instances[k]
          .using(
            resource,
            TTL,
            async () => {
              runs++;
              await sleep(5);
            },
            { onBusy: 'skip', minHold: MIN_HOLD },
          )
          .catch((error: unknown) => void errors.push(error)),
      );
      await Promise.all(calls);
      runsPerFire.push(runs);
    }
    expect(errors).toEqual([]);
    expect(runsPerFire).toEqual(new Array(FIRES).fill(1));
  }, 120_000);

  it('every one of 10 simultaneous fires of two instances runs exactly once while a third master hangs (it times out, they split the other two)', async () => {
    farm ??= ProxyFarm.create(set.masters.map((m) => m.port));
    const instances: Redlock[] = [];
    for (let k = 0; k < 2; k++) {
      const id = `hung-${k}`;
      const nodes = await farm.nodesFor(id);
      for (let j = 0; j < 2; j++) farm.proxies[j].setFault(id, { kind: 'delay', ms: ((j - k + 2) % 2) * SKEW });
      instances.push(await set.redlock({ nodes, commandTimeout: 100 }));
    }
    const errors: unknown[] = [];
    const runsPerFire: number[] = [];
    set.masters[2].pause();
    try {
      for (let fire = 0; fire < 10; fire++) {
        const resource = resourceName(`hung-fire-${fire}`);
        let runs = 0;
        const calls = instances.map((redlock) =>
          redlock
            .using(resource, 4_000, async () => void runs++, { onBusy: 'skip', minHold: 3_000 })
            .catch((error: unknown) => void errors.push(error)),
        );
        await Promise.all(calls);
        runsPerFire.push(runs);
      }
    } finally {
      set.masters[2].resume();
    }
    expect(errors).toEqual([]);
    expect(runsPerFire).toEqual(new Array(10).fill(1));
  }, 120_000);

  it('skips when every answering master refused (another holder has it)', async () => {
    const holder = await set.redlock({ commandTimeout: 100 });
    const other = await set.redlock({ commandTimeout: 100 });
    const resource = resourceName('held');
    const lock = await holder.acquire(resource, 5_000);
    let ran = false;
    const result = await other.using(resource, 900, () => void (ran = true), { onBusy: 'skip' });
    expect(result).toBeUndefined();
    expect(ran).toBe(false);
    await lock.release();
  });

  it('still rejects with LockAcquisitionError (busy false) when Redis, not another holder, stood in the way', async () => {
    const redlock = await set.redlock({ commandTimeout: 100 });
    const resource = resourceName('outage');
    set.masters[0].pause();
    set.masters[1].pause();
    try {
      const error = await redlock.using(resource, 900, () => 'ran', { onBusy: 'skip' }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LockAcquisitionError);
      expect((error as LockAcquisitionError).busy).toBe(false);
    } finally {
      set.masters[0].resume();
      set.masters[1].resume();
    }
  });
});
