import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Cluster } from 'ioredis';
import { openMasters, type Master } from '../../lib/backend/master.js';
import { clusterSlotOf } from '../../lib/backend/cluster/cluster-slot.js';
import { SCRIPTS } from '../../lib/lua/scripts.generated.js';
import { intentKeyOf, readAcquireOn } from '../../lib/kinds/read-write/read-calls.js';
import { startRedisClusters, type RedisClusters } from '../../tools/redis-clusters.js';
import { resourceName } from '../support/index.js';

/**
 * Every script reaches a cluster node through one generic adapter: the call's keys grouped by slot,
 * one call per slot, the replies merged by the script's declared rule (lib/lua/slot-rules.ts).
 */
describe("a cluster node's scripts: split by slot, merged by each script's rule (one 3-shard cluster)", () => {
  let clusters: RedisClusters;
  let cluster: Cluster;
  let reader: Cluster;
  let master: Master;

  /** Two lock keys in different slots. */
  const twoSlots = (label: string): [string, string] => {
    const a = `lock:${resourceName(label)}-a`;
    for (let i = 0; ; i++) {
      const b = `lock:${resourceName(label)}-b${i}`;
      if (clusterSlotOf(b) !== clusterSlotOf(a)) return [a, b];
    }
  };

  beforeAll(async () => {
    clusters = await startRedisClusters(1, { shards: 3 });
    cluster = new Cluster(clusters.clusters[0].startupNodes);
    reader = new Cluster(clusters.clusters[0].startupNodes);
    [master] = openMasters([cluster]);
  }, 90_000);
  afterAll(async () => {
    cluster?.disconnect();
    reader?.disconnect();
    await clusters?.stop();
  });

  it('every script of the table is a call of the node', () => {
    for (const { command } of Object.values(SCRIPTS))
      expect(typeof (master.scripts as unknown as Record<string, unknown>)[command]).toBe('function');
  });

  it('a read acquire across slots is all or nothing: a writer on one key refuses, the other slot is undone', async () => {
    const keys = twoSlots('rule-read');
    await reader.set(keys[1], 'a-writer', 'PX', 30_000);
    // The library's own call: lock keys, intents, lease sets and claim hashes, four keys a resource.
    const reply = await readAcquireOn(master, keys, 'reader-1', '30000');
    expect(reply).toBe(0);
    expect(await reader.exists(keys[0])).toBe(0); // its slot granted, then was undone
    expect(await reader.get(keys[1])).toBe('a-writer');
  }, 30_000);

  it('writer intents across slots: registered on every slot, withdrawn with the sum of slots', async () => {
    const keys = twoSlots('rule-writer');
    const intents = keys.map((k) => intentKeyOf(k, master));
    expect(await master.scripts.quorumLockWriterWaiting(2, ...intents, 'writer-1', '30000')).toBe(1);
    expect(await reader.get(intents[0])).toBe('writer-1');
    expect(await reader.get(intents[1])).toBe('writer-1');
    expect(await master.scripts.quorumLockWriterDone(2, ...intents, 'writer-1')).toBe(2);
  }, 30_000);

  it('a fenced acquire across slots takes the keys, then reads the highest counter from other slots', async () => {
    const keys = twoSlots('rule-fenced');
    const counters = keys.map((k) => k.replace(/^lock:/, 'fence:'));
    await reader.set(counters[1], '41');
    expect(await master.scripts.quorumLockFencedAcquire(4, ...keys, ...counters, 'v', '30000', 2)).toBe(41);
    expect(await reader.get(keys[0])).toBe('v');
    expect(await reader.get(keys[1])).toBe('v');
    expect(await master.scripts.quorumLockFencedAcquire(4, ...keys, ...counters, 'w', '30000', 2)).toBe(-1);
    expect(await master.scripts.quorumLockRelease(2, ...keys, 'v', '0')).toBe(2);
  }, 30_000);
});
