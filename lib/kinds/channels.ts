import { clusterStemOf } from '../backend/cluster/cluster-keys.js';
import { usesShardedPubSub } from '../backend/cluster/cluster-probe.js';
import type { Master } from '../backend/master.js';
import { LUA_NAMES } from '../lua/scripts.generated.js';

/**
 * The pub/sub channel on which a release announces that `key` is free (on a plain master).
 *
 * @example
 * releaseChannelOf('lock:orders'); // '__quorum-lock__:lock:orders'
 */
export function releaseChannelOf(key: string): string {
  return `${RELEASE_PREFIX}${key}`;
}

const { RELEASE_PREFIX, HANDOVER_PREFIX } = LUA_NAMES;

/** How many leading characters of a ticket id name the `Redlock` instance that queued it. */
export const INSTANCE_TAG_LENGTH = LUA_NAMES.INSTANCE_TAG_LENGTH;

/**
 * The channel on which a release that hands a key to a queued waiter names it (docs/handoff.md §3):
 * the key's release channel (`channel`, from `releaseChannelFor`), for the one instance whose tag
 * begins the waiter's ticket id, so that only that instance receives it. Its own prefix keeps it
 * apart from every key's release channel; on a cluster node it keeps the release channel's slot.
 *
 * @example
 * handoverChannelOf('__quorum-lock__:lock:orders', 'k3Jx0a_Q'); // '__quorum-lock__@k3Jx0a_Q:lock:orders'
 */
export function handoverChannelOf(channel: string, tag: string): string {
  return `${HANDOVER_PREFIX}${tag}:${channel.slice(RELEASE_PREFIX.length)}`;
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
