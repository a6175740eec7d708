/** This library, as its README configures it: `new Redlock({ nodes: urls })` (it opens its own connections). */
import { Redlock, type Lock } from 'nestjs-quorum-lock';
import type { AdapterFactory, LockAdapter } from './types.js';

export const quorumLock: AdapterFactory = {
  id: 'quorum-lock',
  label: 'nestjs-quorum-lock',
  package: 'nestjs-quorum-lock',
  kind: 'library',
  retry: { default: 'retryCount 10, retryDelay 200 ± 100 ms', fast: 'retryDelay 10 ± 5 ms' },
  async create(urls, retry): Promise<LockAdapter<Lock>> {
    const redlock = new Redlock({ nodes: [...urls], ...(retry === 'fast' ? { retryDelay: 10, retryJitter: 5 } : {}) });
    await redlock.connect();
    return {
      name: 'nestjs-quorum-lock',
      acquire: (key, ttl) => redlock.acquire(key, ttl),
      release: (lock) => lock.release(),
      close: () => redlock.close(),
    };
  },
};
