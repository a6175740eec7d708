import { RedlockConfigError } from '../errors/redlock-config.error.js';
import type { Master } from './master.js';

/**
 * Refuses read-write (`mode: 'read'`) and counting (`limit`) locks when a node is a Redis Cluster:
 * their scripts keep a lock's key and its companion keys (writer intents, the permit slots and the
 * limit) in one script call, which a cluster refuses across hash slots. Exclusive locks, fencing,
 * wake-ups and leadership work on clusters (docs/cluster.md).
 *
 * @example
 * refuseSharedOnClusters(masters, 'permit'); // throws RedlockConfigError('limit') with a cluster node
 */
export function refuseSharedOnClusters(masters: readonly Master[], kind: 'read' | 'permit'): void {
  const cluster = masters.find((m) => m.cluster);
  if (!cluster) return;
  const option = kind === 'permit' ? 'limit' : 'mode';
  const what = kind === 'permit' ? 'Counting locks (`limit`)' : "Read-write locks (`mode: 'read'`)";
  throw new RedlockConfigError(
    option,
    `${what} are not supported when a node is a Redis Cluster (\`nodes[${cluster.index}]\`, ${cluster.label}): their keys span hash slots. Use exclusive locks there, or plain masters for shared locks.`,
  );
}
