import { EventEmitter, once } from 'node:events';
import { connect, type Socket } from 'node:net';

/**
 * A `MONITOR` connection read line by line, emitting `'monitor'` with (time, args) for each command
 * the server runs, as ioredis's monitor mode does. ioredis's own monitor mode can take the first
 * monitored lines for replies to its queued commands on a loaded machine ("Command queue state
 * error"); a plain socket has no queue to confuse.
 *
 * @example
 * const monitor = await startMonitor(set.urls[0]);
 * monitor.on('monitor', (_time: string, args: string[]) => seen.push(args[0]));
 * monitor.disconnect();
 */
export class Monitor extends EventEmitter {
  #buffer = '';
  #ready = false;

  constructor(private readonly socket: Socket) {
    super();
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => this.read(chunk));
    socket.on('error', () => undefined);
  }

  /** Closes the connection. */
  disconnect(): void {
    this.socket.destroy();
  }

  private read(chunk: string): void {
    this.#buffer += chunk;
    let end: number;
    while ((end = this.#buffer.indexOf('\r\n')) >= 0) {
      const line = this.#buffer.slice(0, end);
      this.#buffer = this.#buffer.slice(end + 2);
      if (!this.#ready) {
        if (line === '+OK') {
          this.#ready = true;
          this.emit('monitoring');
        }
        continue;
      }
      const match = /^\+(\d+\.\d+) \[[^\]]*\] (.*)$/.exec(line);
      if (match) this.emit('monitor', match[1], argsOf(match[2]));
    }
  }
}

/** The quoted arguments of a MONITOR line, unescaped. */
function argsOf(text: string): string[] {
  const args: string[] = [];
  for (const m of text.matchAll(/"((?:[^"\\]|\\.)*)"/g)) {
    args.push(
      m[1].replace(/\\(x[0-9a-fA-F]{2}|.)/g, (_, e: string) =>
        e[0] === 'x' && e.length === 3
          ? String.fromCharCode(parseInt(e.slice(1), 16))
          : (({ n: '\n', r: '\r', t: '\t', a: '\x07', b: '\b' } as Record<string, string>)[e] ?? e),
      ),
    );
  }
  return args;
}

/** Opens a MONITOR connection to `url` (or a `port` on 127.0.0.1) and resolves once it monitors. */
export async function startMonitor(target: string | number): Promise<Monitor> {
  const port = typeof target === 'number' ? target : Number(new URL(target).port);
  const socket = connect({ host: '127.0.0.1', port });
  await once(socket, 'connect');
  const monitor = new Monitor(socket);
  const monitoring = once(monitor, 'monitoring');
  socket.write('MONITOR\r\n');
  await monitoring;
  return monitor;
}
