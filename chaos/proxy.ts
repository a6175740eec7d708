/**
 * A small TCP proxy in front of one Redis master, with one listening port per client, so that a
 * fault can hit chosen clients only (asymmetric partitions: client 1 sees masters 1-3, client 2 sees
 * 3-5). Node built-ins only. Faults:
 *
 * - `delay`: every chunk waits `ms` more in each direction (a round trip gains 2 × ms); order kept.
 * - `drop`: a black hole. Bytes are discarded (both ways, or only the replies) and the connection
 *   stays open, so commands hang until the client's own timeout. A TCP stream cannot lose bytes in
 *   the middle and carry on, so when the fault ends every connection that lost bytes is reset.
 * - `cut`: open connections are reset at once and new ones are reset on arrival.
 * - `cut-commands`: only the client's command connections are cut (reset when known, and again on
 *   each reconnection); its subscriber connection passes. The proxy tells them apart by what each
 *   connection sends (see `classify`): a subscriber reads its server with `INFO server` or subscribes
 *   before anything else, a command connection runs anything else after its ready check.
 */
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';

export type Fault =
  | { readonly kind: 'delay'; readonly ms: number }
  | { readonly kind: 'drop'; readonly direction: 'both' | 'replies' }
  | { readonly kind: 'cut' }
  | { readonly kind: 'cut-commands' };

export function describeFault(f: Fault): string {
  return f.kind === 'delay'
    ? `delay ${f.ms} ms each way`
    : f.kind === 'drop'
      ? f.direction === 'both'
        ? 'black hole'
        : 'replies dropped'
      : f.kind === 'cut'
        ? 'cut'
        : 'command connection cut (subscriber passes)';
}

/** What a connection is, from the commands it sent so far. */
export type ConnectionRole = 'unknown' | 'subscriber' | 'command';

/** Commands any connection may send while it sets up (ioredis's handshake): they tell nothing. */
const HANDSHAKE = new Set(['client', 'hello', 'auth', 'select', 'ping', 'readonly']);

/**
 * The role of a connection after `command` (name and arguments, as sent): a subscriber sends
 * `INFO server` (the library reads its server before it subscribes) or a SUBSCRIBE; a command
 * connection sends anything else. The first bare `INFO` is ioredis's ready check, which both send.
 */
export function classify(
  role: ConnectionRole,
  command: readonly string[],
  readyCheckSeen: boolean,
): { role: ConnectionRole; readyCheck: boolean } {
  if (role !== 'unknown' || command.length === 0) return { role, readyCheck: readyCheckSeen };
  const name = command[0].toLowerCase();
  if (HANDSHAKE.has(name)) return { role, readyCheck: readyCheckSeen };
  if (name === 'info' && command.length === 1 && !readyCheckSeen) return { role, readyCheck: true };
  if (name === 'info' && command[1]?.toLowerCase() === 'server')
    return { role: 'subscriber', readyCheck: readyCheckSeen };
  if (name === 'subscribe' || name === 'ssubscribe' || name === 'psubscribe')
    return { role: 'subscriber', readyCheck: readyCheckSeen };
  return { role: 'command', readyCheck: readyCheckSeen };
}

/**
 * Reads whole RESP commands (arrays of bulk strings, as clients send them) from the front of
 * `buffer`: the commands, and how many bytes they used (a partial command is left for later).
 */
export function parseCommands(buffer: Buffer): { commands: string[][]; used: number } {
  const commands: string[][] = [];
  let at = 0;
  const line = (from: number): { text: string; next: number } | undefined => {
    const end = buffer.indexOf('\r\n', from);
    return end < 0 ? undefined : { text: buffer.toString('latin1', from, end), next: end + 2 };
  };
  outer: while (at < buffer.length) {
    const head = line(at);
    if (!head) break;
    if (!head.text.startsWith('*')) {
      // an inline command: words on one line
      commands.push(head.text.split(' ').filter(Boolean));
      at = head.next;
      continue;
    }
    const count = Number(head.text.slice(1));
    const args: string[] = [];
    let pos = head.next;
    for (let i = 0; i < count; i++) {
      const size = line(pos);
      if (!size) break outer;
      const len = Number(size.text.slice(1));
      if (size.next + len + 2 > buffer.length) break outer;
      args.push(buffer.toString('latin1', size.next, size.next + len));
      pos = size.next + len + 2;
    }
    commands.push(args);
    at = pos;
  }
  return { commands, used: at };
}

const HOST = '127.0.0.1';

/** Chunks for one direction of one connection, released in order when due. */
class Lane {
  private readonly queue: { due: number; chunk: Buffer }[] = [];
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly dest: Socket) {}

  push(chunk: Buffer, delayMs: number): void {
    if (delayMs <= 0 && this.queue.length === 0) {
      if (!this.dest.destroyed) this.dest.write(chunk);
      return;
    }
    const now = performance.now();
    const last = this.queue.length ? this.queue[this.queue.length - 1].due : 0;
    this.queue.push({ due: Math.max(now + delayMs, last), chunk });
    this.arm();
  }

  private arm(): void {
    if (this.timer || this.queue.length === 0) return;
    this.timer = setTimeout(
      () => {
        this.timer = undefined;
        const now = performance.now();
        while (this.queue.length && this.queue[0].due <= now + 0.5) {
          const { chunk } = this.queue.shift()!;
          if (!this.dest.destroyed) this.dest.write(chunk);
        }
        this.arm();
      },
      Math.max(0, this.queue[0].due - performance.now()),
    );
  }

  clear(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.queue.length = 0;
  }
}

interface Pipe {
  readonly client: Socket;
  readonly upstream: Socket;
  readonly up: Lane;
  readonly down: Lane;
  /** Bytes were discarded: the stream is broken and is reset when the fault ends. */
  tainted: boolean;
  /** Subscriber or command connection, once its commands told (see `classify`). */
  role: ConnectionRole;
  readyCheck: boolean;
  /** Bytes of a command not yet complete, while the role is unknown. */
  pending: Buffer;
}

interface Route {
  readonly clientId: string;
  readonly server: Server;
  readonly port: number;
  fault: Fault | undefined;
  readonly pipes: Set<Pipe>;
}

/** Counters, for the report. */
export interface ProxyStats {
  connections: number;
  resets: number;
  droppedChunks: number;
  delayedChunks: number;
  /** Command connections reset by `cut-commands` (their subscribers let through). */
  commandCuts: number;
}

function reset(socket: Socket): void {
  if (socket.destroyed) return;
  try {
    socket.resetAndDestroy(); // RST, like a real partition's connection reset
  } catch {
    socket.destroy();
  }
}

/** The proxy of one master. `route(clientId)` gives the port that client must use. */
export class MasterProxy {
  private readonly routes = new Map<string, Route>();
  private closed = false;
  /** While set, every new connection is reset (a restarting master, until the harness records it). */
  private doorClosed = false;
  readonly stats: ProxyStats = { connections: 0, resets: 0, droppedChunks: 0, delayedChunks: 0, commandCuts: 0 };

  constructor(
    /** The master's index (0-based), for labels. */
    readonly index: number,
    /** The master's port on 127.0.0.1. */
    readonly targetPort: number,
  ) {}

  /** The port for `clientId`, listening from now on (created on first use). */
  async route(clientId: string): Promise<number> {
    const existing = this.routes.get(clientId);
    if (existing) return existing.port;
    const server = createServer({ noDelay: true }, (socket) => this.accept(route, socket));
    server.on('error', () => undefined);
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, HOST, () => resolve());
    });
    const route: Route = {
      clientId,
      server,
      port: (server.address() as AddressInfo).port,
      fault: undefined,
      pipes: new Set(),
    };
    this.routes.set(clientId, route);
    return route.port;
  }

  /** `redis://127.0.0.1:<port>` for `clientId`; `route()` must have been awaited before. */
  url(clientId: string): string {
    const route = this.routes.get(clientId);
    if (!route) throw new Error(`proxy ${this.index}: no route for ${clientId}`);
    return `redis://${HOST}:${route.port}`;
  }

  /** Sets (or, with `undefined`, heals) the fault between `clientId` and this master. */
  setFault(clientId: string, fault: Fault | undefined): void {
    const route = this.routes.get(clientId);
    if (!route) return;
    const before = route.fault;
    route.fault = fault;
    if (fault?.kind === 'cut') {
      for (const pipe of route.pipes) this.resetPipe(pipe);
    } else if (fault?.kind === 'cut-commands') {
      for (const pipe of route.pipes) if (pipe.role === 'command') this.cutCommands(pipe);
    } else if (before?.kind === 'drop' && fault?.kind !== 'drop') {
      for (const pipe of route.pipes) if (pipe.tainted) this.resetPipe(pipe);
    }
  }

  /**
   * Refuses (resets) every new connection to this master until opened again, for every client: a
   * restarted master is let in only once the harness's MONITOR records it, so that no command it runs
   * is missing from the history.
   */
  setDoorClosed(closed: boolean): void {
    this.doorClosed = closed;
  }

  /** Heals every route. */
  healAll(): void {
    this.doorClosed = false;
    for (const id of this.routes.keys()) this.setFault(id, undefined);
  }

  faultOf(clientId: string): Fault | undefined {
    return this.routes.get(clientId)?.fault;
  }

  /** Closes the listeners and every connection. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(
      [...this.routes.values()].map((route) => {
        for (const pipe of route.pipes) this.resetPipe(pipe);
        return new Promise<void>((resolve) => route.server.close(() => resolve()));
      }),
    );
    this.routes.clear();
  }

  private cutCommands(pipe: Pipe): void {
    this.stats.commandCuts++;
    this.resetPipe(pipe);
  }

  private resetPipe(pipe: Pipe): void {
    pipe.up.clear();
    pipe.down.clear();
    this.stats.resets++;
    reset(pipe.client);
    reset(pipe.upstream);
  }

  private accept(route: Route, client: Socket): void {
    if (this.closed || this.doorClosed || route.fault?.kind === 'cut') {
      this.stats.resets++;
      client.on('error', () => undefined);
      reset(client);
      return;
    }
    this.stats.connections++;
    client.pause(); // until the master answers the connect
    const upstream = connect({ host: HOST, port: this.targetPort, noDelay: true });
    const pipe: Pipe = {
      client,
      upstream,
      up: new Lane(upstream),
      down: new Lane(client),
      tainted: false,
      role: 'unknown',
      readyCheck: false,
      pending: Buffer.alloc(0),
    };
    route.pipes.add(pipe);
    const end = () => {
      route.pipes.delete(pipe);
      pipe.up.clear();
      pipe.down.clear();
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end);
    upstream.on('error', end);
    client.on('close', end);
    upstream.on('close', end);
    upstream.on('connect', () => client.resume());
    client.on('data', (chunk: Buffer) => this.forward(route, pipe, chunk, 'up'));
    upstream.on('data', (chunk: Buffer) => this.forward(route, pipe, chunk, 'down'));
  }

  /** Reads the client's commands until they tell the connection's role. */
  private learnRole(pipe: Pipe, chunk: Buffer): void {
    if (pipe.role !== 'unknown') return;
    const buffer = pipe.pending.length ? Buffer.concat([pipe.pending, chunk]) : chunk;
    const { commands, used } = parseCommands(buffer);
    for (const command of commands) {
      const next = classify(pipe.role, command, pipe.readyCheck);
      pipe.role = next.role;
      pipe.readyCheck = next.readyCheck;
      if (pipe.role !== 'unknown') break;
    }
    pipe.pending = pipe.role === 'unknown' ? Buffer.from(buffer.subarray(used)) : Buffer.alloc(0);
  }

  private forward(route: Route, pipe: Pipe, chunk: Buffer, direction: 'up' | 'down'): void {
    if (direction === 'up') this.learnRole(pipe, chunk);
    const fault = route.fault;
    if (fault?.kind === 'cut-commands' && pipe.role === 'command') {
      this.cutCommands(pipe); // this chunk included: the server never sees the command connection's commands
      return;
    }
    if (fault?.kind === 'drop' && (fault.direction === 'both' || direction === 'down')) {
      pipe.tainted = true;
      this.stats.droppedChunks++;
      return;
    }
    if (fault?.kind === 'cut') return; // being reset
    const delay = fault?.kind === 'delay' ? fault.ms : 0;
    if (delay > 0) this.stats.delayedChunks++;
    (direction === 'up' ? pipe.up : pipe.down).push(chunk, delay);
  }
}

/** One proxy per master. */
export class ProxyFarm {
  constructor(readonly proxies: readonly MasterProxy[]) {}

  static create(masterPorts: readonly number[]): ProxyFarm {
    return new ProxyFarm(masterPorts.map((port, i) => new MasterProxy(i, port)));
  }

  /** The node URLs for `clientId`, one per master in master order (routes opened if needed). */
  async nodesFor(clientId: string): Promise<string[]> {
    await Promise.all(this.proxies.map((p) => p.route(clientId)));
    return this.proxies.map((p) => p.url(clientId));
  }

  /** Applies `fault` between each of `clients` and each of `masters` (indices). */
  set(clients: readonly string[], masters: readonly number[], fault: Fault | undefined): void {
    for (const m of masters) for (const c of clients) this.proxies[m].setFault(c, fault);
  }

  healAll(): void {
    for (const p of this.proxies) p.healAll();
  }

  stats(): ProxyStats {
    const total: ProxyStats = { connections: 0, resets: 0, droppedChunks: 0, delayedChunks: 0, commandCuts: 0 };
    for (const p of this.proxies) for (const k of Object.keys(total) as (keyof ProxyStats)[]) total[k] += p.stats[k];
    return total;
  }

  close(): Promise<void> {
    return Promise.all(this.proxies.map((p) => p.close())).then(() => undefined);
  }
}
