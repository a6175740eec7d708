import { describe, expect, it } from '@jest/globals';
import { compareShards, type ShardIdentity } from '../../lib/backend/cluster/cluster-identity.js';

const ZERO = '0'.repeat(40);
const a: ShardIdentity = {
  first: 0,
  last: 8191,
  owner: '127.0.0.1:7000',
  nodeId: 'node-a',
  runId: 'run-a',
  replId: 'repl-a',
  replId2: ZERO,
  uptimeMs: 60_000,
};
const b: ShardIdentity = { ...a, first: 8192, last: 16383, owner: '127.0.0.1:7001', nodeId: 'node-b', runId: 'run-b' };

describe('compareShards (a cluster node identity, slot range by slot range)', () => {
  it('sees no change when every range has the same primary, run_id and history', () => {
    expect(compareShards([a, b], [{ ...a, uptimeMs: 61_000 }, b]).change).toBe('same');
  });

  it('calls a new run_id on the same node a restart, dated by that primary', () => {
    const restarted = { ...b, runId: 'run-b2', replId: 'repl-b2', uptimeMs: 1_000 };
    expect(compareShards([a, b], [a, restarted])).toEqual({
      change: 'restarted',
      uptimeMs: 1_000,
      shard: 'slots 8192-16383 at 127.0.0.1:7001 (restarted)',
    });
  });

  it('calls a range now served by a node that served none a failover (a promoted replica)', () => {
    const promoted = { ...a, owner: '127.0.0.1:7003', nodeId: 'node-a-replica', runId: 'run-r', replId2: 'repl-a' };
    expect(compareShards([a, b], [promoted, b])).toMatchObject({
      change: 'failover',
      shard: 'slots 0-8191 at 127.0.0.1:7003 (was 127.0.0.1:7000)',
    });
  });

  it('calls one slot now served by another shard a moved slot, naming the slot', () => {
    const after = [
      { ...a, last: 8191 },
      { ...b, last: 16304 },
      { ...a, first: 16305, last: 16305 },
      { ...b, first: 16306 },
    ];
    expect(compareShards([a, b], after)).toMatchObject({
      change: 'slot-moved',
      shard: 'slot 16305 at 127.0.0.1:7000 (was 127.0.0.1:7001)',
    });
  });

  it('tells a primary promoted again (master_replid2 set) from one that gained its first replica', () => {
    expect(compareShards([a, b], [{ ...a, replId: 'repl-a2', replId2: ZERO }, b]).change).toBe('same');
    expect(compareShards([a, b], [{ ...a, replId: 'repl-b', replId2: 'repl-a' }, b])).toMatchObject({
      change: 'failover',
      shard: 'slots 0-8191 at 127.0.0.1:7000 (promoted again)',
    });
  });

  it('calls slots that no shard served before moved', () => {
    expect(compareShards([{ ...a, last: 100 }], [a]).change).toBe('slot-moved');
  });
});
