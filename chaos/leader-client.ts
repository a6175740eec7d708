/**
 * A leadership chaos client: one OS process (forked by leadership-phase.ts) that campaigns with the
 * BUILT package for one resource, reports its terms over IPC, and while it leads appends
 * `client|term|token` to a list on the register server every few ms (the leader's work), which the
 * phase reads to check that terms never overlap and that tokens only increase.
 */
import { Redis } from 'ioredis';
import { Redlock } from 'nestjs-quorum-lock';

export interface LeaderClientConfig {
  id: string;
  nodes: string[];
  registerUrl: string;
  logKey: string;
  resource: string;
  ttl: number;
  retryDelay: number;
  commandTimeout: number;
}

export type FromLeaderClient =
  | { type: 'ready' }
  | { type: 'change'; id: string; leading: boolean; at: number; term: number; token: number | undefined }
  | { type: 'resigned'; at: number };

export type ToLeaderClient = { type: 'resign' } | { type: 'stop' };

/** Wall-clock ms with sub-ms resolution, comparable across the processes of this host. */
const wallNow = (): number => performance.timeOrigin + performance.now();
const send = (message: FromLeaderClient): void => void process.send?.(message);

const config = JSON.parse(process.argv[2]) as LeaderClientConfig;
const redlock = new Redlock({ nodes: config.nodes, commandTimeout: config.commandTimeout, connectTimeout: 1_000 });
await redlock.connect();
const register = new Redis(config.registerUrl, { maxRetriesPerRequest: 1 });
register.on('error', () => undefined);
const leadership = redlock.lead(config.resource, { ttl: config.ttl, retryDelay: config.retryDelay, fencing: true });
leadership.changes.subscribe((leading) => {
  send({
    type: 'change',
    id: config.id,
    leading,
    at: wallNow(),
    term: leadership.terms,
    token: leading ? leadership.fencingToken : undefined,
  });
});
// Check and write in one synchronous turn: the command is on the socket before anything else runs here.
const work = setInterval(() => {
  if (leadership.isLeader)
    void register
      .rpush(config.logKey, `${config.id}|${leadership.terms}|${leadership.fencingToken}`)
      .catch(() => undefined);
}, 10);

process.on('message', (message: ToLeaderClient) => {
  void (async () => {
    if (message.type === 'resign') {
      await leadership.resign();
      send({ type: 'resigned', at: wallNow() });
      return;
    }
    clearInterval(work);
    await redlock.close();
    register.disconnect();
    process.exit(0);
  })();
});
process.on('disconnect', () => process.exit(0));
send({ type: 'ready' });
