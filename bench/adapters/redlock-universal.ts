/**
 * redlock-universal's `RedLock` class over `IoredisAdapter`s, as its README shows: one RedLock per key
 * (`new RedLock({ adapters, key, ttl })`), `acquire()` then `release(handle)`.
 */
import type { Redis } from 'ioredis';
import { IoredisAdapter, RedLock, type LockHandle } from 'redlock-universal';
import { closeClients, openClients } from './clients.js';
import type { AdapterFactory, LockAdapter } from './types.js';

interface Held {
  lock: RedLock;
  handle: LockHandle;
}

export const redlockUniversal: AdapterFactory = {
  id: 'redlock-universal',
  label: 'redlock-universal',
  package: 'redlock-universal',
  kind: 'library',
  retry: { default: 'retryAttempts 3, retryDelay 200 ms (no jitter)', fast: 'retryDelay 10 ms' },
  async create(urls, retry): Promise<LockAdapter<Held>> {
    const clients: Redis[] = await openClients(urls);
    const adapters = clients.map((client) => new IoredisAdapter(client));
    const retryDelay = retry === 'fast' ? { retryDelay: 10 } : {};
    return {
      name: 'redlock-universal',
      async acquire(key, ttl) {
        const lock = new RedLock({ adapters, key, ttl, ...retryDelay });
        return { lock, handle: await lock.acquire() };
      },
      release: async ({ lock, handle }) => void (await lock.release(handle)),
      close: () => closeClients(clients),
    };
  },
};
