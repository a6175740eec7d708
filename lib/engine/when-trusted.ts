import { RedlockClosedError } from '../errors/redlock-closed.error.js';
import { RedlockError } from '../errors/redlock.error.js';
import { checkTtl } from '../options/redlock-options.js';
import { driftOf, now } from '../util/clock.js';
import type { EngineState } from './engine-state.js';

/**
 * Resolves once a quorum of masters is connected and counts (the restart guard trusts them);
 * rejects with `RedlockError` after `timeout` ms (default: the restart guard's duration plus
 * `connectTimeout`), naming each master that does not count and why.
 */
export async function whenTrusted(
  state: EngineState,
  options: { timeout?: number; signal?: AbortSignal },
): Promise<void> {
  const ttl = Math.max(state.options.restartGuard ? (state.options.restartGuard.largestTtl ?? 0) : 0, state.largestTtl);
  const timeout =
    options.timeout === undefined
      ? (state.options.restartGuard ? ttl + driftOf(ttl, state.options.driftFactor) : 0) + state.options.connectTimeout
      : checkTtl(options.timeout, 'timeout');
  const deadline = now() + timeout;
  for (;;) {
    options.signal?.throwIfAborted();
    if (state.closing.signal.aborted) throw new RedlockClosedError();
    const states = state.monitor.states();
    if (states.filter((m) => m.trusted).length >= state.quorum) return;
    const left = deadline - now();
    if (left <= 0) {
      const why = states
        .filter((m) => !m.trusted)
        .map(
          (m) =>
            `${m.label} ${m.distrust ?? 'not counted'}${m.distrust === 'unreachable' ? (m.lastError ? ` (${m.lastError})` : '') : m.distrustedFor ? ` for ${m.distrustedFor} ms more` : ''}`,
        )
        .join(', ');
      throw new RedlockError(
        `Fewer than ${state.quorum} of ${states.length} masters count after ${timeout} ms: ${why}.`,
      );
    }
    await new Promise<void>((resolve) => setTimeout(resolve, Math.min(25, left)).unref());
  }
}
