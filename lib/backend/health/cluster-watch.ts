import type { Cluster, Redis } from 'ioredis';

/** How often a cluster node's shards are read again while nothing else triggers it. */
export const CLUSTER_VET_INTERVAL_MS = 1_000;
/** How soon a cluster node's shards are read again after a reading was interrupted by a change. */
export const CLUSTER_VET_RETRY_MS = 100;

/** What a cluster node's monitor does when its shards may have changed. */
export interface ClusterWatchHandlers {
  /** The client has just replaced its slot map (the event comes synchronously after the replacement). */
  readonly refreshed: () => void;
  /** A node the client was already connected to connected again (a restarted primary, a network cut). */
  readonly nodeReconnected: () => void;
  /** Called every {@link CLUSTER_VET_INTERVAL_MS} when given: a primary demoted and promoted again keeps its routes. */
  readonly tick?: () => void;
}

/**
 * A cluster stays `ready` through a shard failover, a restarted shard primary or a moved slot, so
 * the events that can reveal one are watched on their own: the slot map's refreshes, each node's
 * reconnects, and a periodic tick. Returns what stops watching.
 */
export function watchClusterShards(cluster: Cluster, on: ClusterWatchHandlers): () => void {
  const watched = new Set<Redis>();
  const onNode = (node: Redis): void => {
    if (watched.has(node)) return;
    watched.add(node);
    // Not on the first connect of a node (the cluster's own 'ready' covers start-up): on its reconnects.
    let seenReady = node.status === 'ready';
    node.on('ready', () => {
      if (seenReady) on.nodeReconnected();
      seenReady = true;
    });
  };
  const tick = on.tick;
  const vet = tick ? setInterval(() => tick(), CLUSTER_VET_INTERVAL_MS) : undefined;
  vet?.unref();
  const onRefresh = on.refreshed;
  cluster.on('refresh', onRefresh);
  cluster.on('+node', onNode);
  for (const node of cluster.nodes('all')) onNode(node);
  return () => {
    clearInterval(vet);
    cluster.off('refresh', onRefresh);
    cluster.off('+node', onNode);
  };
}
