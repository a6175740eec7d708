/**
 * The physical limit: what any Redlock client must send, and nothing more. Acquire is
 * `SET key value NX PX ttl` on every master at once, resolved as soon as a quorum said OK; release is
 * the compare-and-delete script (EVALSHA, loaded once) on every master, resolved as soon as a quorum
 * answered. No retries, no validity bookkeeping, no timers. With and without ioredis
 * `enableAutoPipelining` (which coalesces the commands issued in one tick per connection).
 */
import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { closeClients, openClients } from './clients.js';
import type { AdapterFactory, LockAdapter } from './types.js';

const RELEASE = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`;

interface Held {
  key: string;
  value: string;
}

/** Resolves when `quorum` of `calls` succeeded; rejects as soon as that has become impossible. */
function quorumOf(calls: Promise<unknown>[], quorum: number, ok: (reply: unknown) => boolean): Promise<void> {
  return new Promise((resolve, reject) => {
    let yes = 0;
    let no = 0;
    const vote = (granted: boolean) => {
      if (granted) {
        if (++yes === quorum) resolve();
      } else if (++no === calls.length - quorum + 1) {
        reject(new Error('no quorum'));
      }
    };
    for (const call of calls)
      call.then(
        (reply) => vote(ok(reply)),
        () => vote(false),
      );
  });
}

function rawFactory(autoPipelining: boolean): AdapterFactory {
  return {
    id: autoPipelining ? 'raw-ap' : 'raw',
    label: autoPipelining ? 'raw quorum (auto-pipelining)' : 'raw quorum',
    package: 'ioredis',
    kind: 'limit',
    retry: { default: 'no retries', fast: null },
    async create(urls): Promise<LockAdapter<Held>> {
      const clients: Redis[] = await openClients(urls, { enableAutoPipelining: autoPipelining });
      const sha = String(await clients[0].script('LOAD', RELEASE));
      await Promise.all(clients.slice(1).map((c) => c.script('LOAD', RELEASE)));
      const quorum = Math.floor(clients.length / 2) + 1;
      return {
        name: autoPipelining ? 'raw-ap' : 'raw',
        async acquire(key, ttl) {
          const value = randomBytes(16).toString('base64url');
          const calls = clients.map((c) => c.set(key, value, 'PX', ttl, 'NX'));
          try {
            await quorumOf(calls, quorum, (reply) => reply === 'OK');
          } catch (error) {
            void quorumOf(
              clients.map((c) => c.evalsha(sha, 1, key, value)),
              quorum,
              () => true,
            ).catch(() => {});
            throw error;
          }
          return { key, value };
        },
        release: ({ key, value }) =>
          quorumOf(
            clients.map((c) => c.evalsha(sha, 1, key, value)),
            quorum,
            () => true,
          ),
        close: () => closeClients(clients),
      };
    },
  };
}

export const rawQuorum = rawFactory(false);
export const rawQuorumPipelined = rawFactory(true);
