import { sharedNow } from './clock.js';

/**
 * This process's event-loop stalls, measured: a timer due every PERIOD ms notes how late it ran.
 * A lock's abort timer cannot fire while the loop is stalled (a long synchronous task, or the
 * process starved of CPU on a loaded machine), so a lock-loss delivered late across such a stall
 * is explained by it, not by the library. Times are on the shared clock (`sharedNow`).
 */
export interface LoopStall {
  /** When the sampling timer was due. */
  readonly from: number;
  /** When it ran. */
  readonly to: number;
}

const PERIOD = 10;
/** Lateness below this is timer noise, not a stall. */
const NOTED = 3;
/** Stalls older than this are forgotten (sections are checked right after they settle). */
const KEEP = 60_000;

const stalls: LoopStall[] = [];
let users = 0;
let timer: NodeJS.Timeout | undefined;

function sample(due: number): void {
  timer = setTimeout(() => {
    const ran = sharedNow();
    if (ran - due > NOTED) stalls.push({ from: due, to: ran });
    while (stalls.length > 0 && stalls[0].to < ran - KEEP) stalls.shift();
    sample(ran + PERIOD);
  }, PERIOD);
  timer.unref();
}

/** Starts measuring (shared by every workload of this process); call the returned function to stop. */
export function watchLoopStalls(): () => void {
  if (users++ === 0) sample(sharedNow() + PERIOD);
  let stopped = false;
  return () => {
    if (stopped) return;
    stopped = true;
    if (--users === 0) clearTimeout(timer);
  };
}

/**
 * The measured stall that spans from before `deadline` to `until` (within `slack` ms: the delivery
 * may run just before the sampler in the same turn of the loop), if any: a timer due before
 * `deadline` could not run before `until`.
 */
export function stallAcross(deadline: number, until: number, slack = 5): LoopStall | undefined {
  return stalls.find((s) => s.from <= deadline && s.to >= until - slack);
}
