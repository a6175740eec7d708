import { driftOf, now } from './clock.js';
import type { Master } from './master.js';

/**
 * Redlock's "delayed restart" rule, enforced by the client. A master that restarted without its data
 * can grant a lock that another client still holds there. So whenever a connection to a master
 * becomes ready (first connect or reconnect), that master's votes stop counting until `INFO server`
 * shows it has been up longer than the largest TTL plus drift: by then every key it could have
 * forgotten has expired anyway.
 */
export class RestartGuard {
  /** Monotonic instant until which each master's votes do not count (0: trusted). */
  readonly #distrustedUntil: number[];
  readonly #runIds: (string | undefined)[];
  /** How many times each master was seen to restart (its run_id changed). */
  readonly restarts: number[];
  readonly #onReady: (() => void)[];

  constructor(
    private readonly masters: readonly Master[],
    private readonly largestTtl: () => number,
    private readonly driftFactor: number,
  ) {
    this.#distrustedUntil = masters.map(() => 0);
    this.#runIds = masters.map(() => undefined);
    this.restarts = masters.map(() => 0);
    this.#onReady = masters.map((master, i) => {
      const onReady = (): void => this.recheck(i);
      master.client.on('ready', onReady);
      if (master.client.status === 'ready') this.recheck(i);
      return onReady;
    });
  }

  /** Stops watching the masters' connections (they may be the user's, and outlive this guard). */
  dispose(): void {
    this.masters.forEach((master, i) => master.client.off('ready', this.#onReady[i]));
  }

  /** True when master `i`'s votes count. */
  trusts(i: number): boolean {
    const until = this.#distrustedUntil[i];
    return until === 0 || (until <= now() && ((this.#distrustedUntil[i] = 0), true));
  }

  /** Milliseconds until master `i` is trusted again (0 when it is). */
  distrustedFor(i: number): number {
    return this.trusts(i) ? 0 : this.#distrustedUntil[i] - now();
  }

  /** A (re)connected master is distrusted at once, then for as long as its uptime says. */
  private recheck(i: number): void {
    this.#distrustedUntil[i] = Infinity;
    const asked = now();
    this.masters[i].client.info('server').then(
      (info) => {
        const runId = /run_id:(\w+)/.exec(info)?.[1];
        // Redis reports uptime as the difference of two wall-clock times each truncated to the second,
        // so it can overstate the real uptime by almost a second: count one second less.
        const uptimeMs = Math.max(0, Number(/uptime_in_seconds:(\d+)/.exec(info)?.[1] ?? 0) - 1) * 1_000;
        if (runId && this.#runIds[i] && runId !== this.#runIds[i]) this.restarts[i]++;
        this.#runIds[i] = runId;
        const ttl = this.largestTtl();
        const guard = ttl + driftOf(ttl, this.driftFactor);
        this.#distrustedUntil[i] = uptimeMs >= guard ? 0 : asked + guard - uptimeMs;
      },
      () => {
        // No answer: stay distrusted until the next successful connect asks again.
      },
    );
  }
}
