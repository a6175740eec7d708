/** This library, as its README configures it: `new Redlock({ nodes: urls })` (it opens its own connections). */
import { Redlock, type Lock } from 'nestjs-quorum-lock';
import type { AdapterFactory, LockAdapter } from './types.js';

/** The part of `Redlock` the adapter uses; another commit's build (`--compare`) has it too. */
export type RedlockClass = new (options: { nodes: string[]; retryDelay?: number; retryJitter?: number }) => {
  connect(): Promise<void>;
  acquire(key: string, ttl: number): Promise<{ release(): Promise<void> }>;
  close(): Promise<void>;
};

/** An adapter factory over one build of the library. */
export function quorumLockBuild(id: string, label: string, RedlockOf: RedlockClass): AdapterFactory {
  return {
    id,
    label,
    package: 'nestjs-quorum-lock',
    kind: 'library',
    retry: { default: 'retryCount 10, retryDelay 200 ± 100 ms', fast: 'retryDelay 10 ± 5 ms' },
    async create(urls, retry): Promise<LockAdapter> {
      const redlock = new RedlockOf({
        nodes: [...urls],
        ...(retry === 'fast' ? { retryDelay: 10, retryJitter: 5 } : {}),
      });
      await redlock.connect();
      return {
        name: label,
        acquire: (key, ttl) => redlock.acquire(key, ttl),
        release: (lock) => (lock as Lock).release(),
        close: () => redlock.close(),
      };
    },
  };
}

export const quorumLock: AdapterFactory = quorumLockBuild('quorum-lock', 'nestjs-quorum-lock', Redlock);
