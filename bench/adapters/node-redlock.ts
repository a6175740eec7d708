/**
 * node-redlock 5 beta (`redlock@5.0.0-beta.2`), configured as its README shows: one ioredis client per
 * master, `new Redlock(clients, settings)`, an `error` listener (it emits one per refused vote and an
 * EventEmitter without a listener would throw), `acquire([key], ttl)` and `lock.release()`.
 */
import Redlock, { type Lock } from 'redlock';
import { closeClients, openClients } from './clients.js';
import type { AdapterFactory, LockAdapter } from './types.js';

export const nodeRedlock: AdapterFactory = {
  id: 'node-redlock',
  label: 'node-redlock',
  package: 'redlock',
  kind: 'library',
  retry: { default: 'retryCount 10, retryDelay 200 ± 100 ms', fast: 'retryDelay 10 ± 5 ms' },
  async create(urls, retry): Promise<LockAdapter<Lock>> {
    const clients = await openClients(urls);
    const redlock = new Redlock(clients, retry === 'fast' ? { retryDelay: 10, retryJitter: 5 } : {});
    redlock.on('error', () => {}); // refused votes (ResourceLockedError) are expected under contention
    return {
      name: 'node-redlock',
      acquire: (key, ttl) => redlock.acquire([key], ttl),
      release: async (lock) => void (await lock.release()),
      close: () => closeClients(clients),
    };
  },
};
