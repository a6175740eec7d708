import { clusterStemOf } from './cluster-keys.js';
import { usesShardedPubSub } from './cluster-probe.js';
import type { Master } from './master.js';

/**
 * The pub/sub channel on which a release announces that `key` is free (on a plain master).
 *
 * @example
 * releaseChannelOf('lock:orders'); // '__quorum-lock__:lock:orders'
 */
export function releaseChannelOf(key: string): string {
  return `__quorum-lock__:${key}`;
}

/**
 * The release channel of `key` on `master`: `releaseChannelOf(key)` on a plain master; on a cluster
 * node, built on the key's cluster stem so that it is in the lock key's slot, as sharded pub/sub
 * needs (the release script publishes from that slot). See docs/cluster.md.
 *
 * @example
 * releaseChannelFor(clusterNode, 'lock:orders'); // '__quorum-lock__:lock:orders{lock:orders}'
 */
export function releaseChannelFor(master: Pick<Master, 'cluster'>, key: string): string {
  return master.cluster ? releaseChannelOf(clusterStemOf(key)) : releaseChannelOf(key);
}

/**
 * The release scripts' announce argument on `master`: '0' (silent), '1' (`PUBLISH`), or 's'
 * (`SPUBLISH`: a cluster whose shards all run Redis 7+, where a classic message would be copied to
 * every node of the cluster).
 *
 * @example
 * announceFlagFor(master, true); // 's' on a Redis 7+ cluster, '1' elsewhere
 */
export function announceFlagFor(master: Pick<Master, 'cluster'>, announce: boolean): '0' | '1' | 's' {
  if (!announce) return '0';
  return master.cluster && usesShardedPubSub(master.cluster) ? 's' : '1';
}
