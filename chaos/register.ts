/**
 * The protected resource: a register on a SEPARATE redis-server (not one of the lock masters), written
 * by holders at the end of each critical section ("commit"). Each write goes to two logs at once:
 *
 * - the fenced log, through a Lua script that refuses a token at or below the highest it has accepted
 *   (Kleppmann's fencing check, done by the storage, atomically);
 * - the unfenced log, which accepts everything (what the resource would see without fencing).
 *
 * The checker then compares each log's order with the order in which the lock was granted.
 */
import { Redis } from 'ioredis';

/** KEYS: highest token, fenced log, unfenced log. ARGV: token (or '' without one), section id. 1 = accepted. */
export const FENCED_WRITE_LUA = `
redis.call('rpush', KEYS[3], ARGV[2])
if ARGV[1] == '' then return -1 end
local token = tonumber(ARGV[1])
local high = tonumber(redis.call('get', KEYS[1]) or '-1')
if token > high then
  redis.call('set', KEYS[1], ARGV[1])
  redis.call('rpush', KEYS[2], ARGV[1] .. '|' .. ARGV[2])
  return 1
end
return 0`;

const keysOf = (resource: string) => [`reg:high:${resource}`, `reg:fenced:${resource}`, `reg:unfenced:${resource}`];

type WithFencedWrite = Redis & { chaosFencedWrite(numKeys: number, ...args: string[]): Promise<number> };

/** A connection to the register. */
export class FencedRegister {
  private readonly redis: WithFencedWrite;

  constructor(url: string) {
    this.redis = new Redis(url, { maxRetriesPerRequest: 2, lazyConnect: true }) as WithFencedWrite;
    this.redis.on('error', () => undefined);
    this.redis.defineCommand('chaosFencedWrite', { lua: FENCED_WRITE_LUA });
  }

  connect(): Promise<void> {
    return this.redis.connect();
  }

  /** Writes `sectionId` under `token`: 'accepted' / 'rejected' by the fenced log ('unfenced' when there is no token). */
  async write(
    resource: string,
    token: number | undefined,
    sectionId: string,
  ): Promise<'accepted' | 'rejected' | 'unfenced'> {
    const reply = await this.redis.chaosFencedWrite(
      3,
      ...keysOf(resource),
      token === undefined ? '' : String(token),
      sectionId,
    );
    return reply === 1 ? 'accepted' : reply === 0 ? 'rejected' : 'unfenced';
  }

  /** The logs of every resource whose name starts with `prefix`, in acceptance order. */
  async logs(prefix = ''): Promise<Map<string, { fenced: { token: number; section: string }[]; unfenced: string[] }>> {
    const out = new Map<string, { fenced: { token: number; section: string }[]; unfenced: string[] }>();
    let cursor = '0';
    const resources = new Set<string>();
    do {
      const [next, keys] = await this.redis.scan(cursor, 'MATCH', `reg:unfenced:${prefix}*`, 'COUNT', 1000);
      cursor = next;
      for (const k of keys) resources.add(k.slice('reg:unfenced:'.length));
    } while (cursor !== '0');
    for (const resource of resources) {
      const [, fencedKey, unfencedKey] = keysOf(resource);
      const [fenced, unfenced] = await Promise.all([
        this.redis.lrange(fencedKey, 0, -1),
        this.redis.lrange(unfencedKey, 0, -1),
      ]);
      out.set(resource, {
        fenced: fenced.map((entry) => {
          const bar = entry.indexOf('|');
          return { token: Number(entry.slice(0, bar)), section: entry.slice(bar + 1) };
        }),
        unfenced,
      });
    }
    return out;
  }

  async flush(): Promise<void> {
    await this.redis.flushall();
  }

  close(): void {
    this.redis.disconnect();
  }
}
