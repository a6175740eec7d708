/**
 * redis-semaphore's `RedlockMutex`, as its README shows: one ioredis client per master,
 * `new RedlockMutex(clients, key, { lockTimeout })`, `acquire()` then `release()`. Its defaults stay on
 * (refresh every 0.8·lockTimeout while held, retryInterval 10 ms, acquireTimeout 10 s), so its
 * "10 ms retry delay" profile is its default profile.
 */
import { RedlockMutex } from 'redis-semaphore';
import { closeClients, openClients } from './clients.js';
import type { AdapterFactory, LockAdapter } from './types.js';

export const redisSemaphore: AdapterFactory = {
  id: 'redis-semaphore',
  label: 'redis-semaphore',
  package: 'redis-semaphore',
  kind: 'library',
  retry: { default: 'retryInterval 10 ms (no jitter), acquireTimeout 10 s', fast: null },
  async create(urls): Promise<LockAdapter<RedlockMutex>> {
    const clients = await openClients(urls);
    return {
      name: 'redis-semaphore',
      async acquire(key, ttl) {
        const mutex = new RedlockMutex(clients, key, { lockTimeout: ttl });
        await mutex.acquire();
        return mutex;
      },
      release: (mutex) => mutex.release(),
      close: () => closeClients(clients),
    };
  },
};
