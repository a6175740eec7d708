import { nodeRedlock } from './node-redlock.js';
import { quorumLock } from './quorum-lock.js';
import { rawQuorum, rawQuorumPipelined } from './raw-quorum.js';
import { redisSemaphore } from './redis-semaphore.js';
import { redlockUniversal } from './redlock-universal.js';
import type { AdapterFactory } from './types.js';

/** Every subject, in report order: this library, the peers, then the raw limit. */
export const FACTORIES: readonly AdapterFactory[] = [
  quorumLock,
  nodeRedlock,
  redlockUniversal,
  redisSemaphore,
  rawQuorum,
  rawQuorumPipelined,
];

export const OURS = quorumLock.id;
