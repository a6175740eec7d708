/**
 * The one interface every subject of the benchmark implements: a library configured its documented
 * way, or the raw ioredis quorum that stands for the physical limit.
 */
export interface LockAdapter<H = unknown> {
  readonly name: string;
  /** Resolves once the lock is held (retrying as the library's settings say); rejects when it gives up. */
  acquire(key: string, ttl: number): Promise<H>;
  release(handle: H): Promise<void>;
  /** Closes the connections this adapter opened. */
  close(): Promise<void>;
}

/** Retry settings under contention: each library's defaults, or a 10 ms retry delay. */
export type RetryProfile = 'default' | 'fast';

export interface AdapterFactory {
  /** Command-line id (`--libs`). */
  readonly id: string;
  /** Display name. */
  readonly label: string;
  /** The npm package measured (its installed version goes in the report). */
  readonly package: string;
  /** `library`: a lock library; `limit`: the raw quorum baseline (not used under contention). */
  readonly kind: 'library' | 'limit';
  /** What each retry profile means for this library; `fast: null` when it equals `default`. */
  readonly retry: { default: string; fast: string | null };
  create(urls: readonly string[], retry: RetryProfile): Promise<LockAdapter>;
}

/** Acquire + release of one key: what the latency and throughput workloads repeat. */
export type Cycle = (key: string) => Promise<void>;

export function cycleOf(adapter: LockAdapter, ttl: number): Cycle {
  return async (key) => {
    const handle = await adapter.acquire(key, ttl);
    await adapter.release(handle);
  };
}
