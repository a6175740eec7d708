/**
 * Type test (compiled by `npm run typecheck`, never run): the testing stand-in's `using()` resolves
 * to the same types as the real service's, overload for overload. TypeScript gives a class method
 * its overloads only from the class body, so both classes write the three overloads
 * (docs/decisions.md, polish2); a drift in either fails the type check here.
 */
import type { Redlock } from '../../lib/index.js';
import type { RedlockTestingService } from '../../lib/testing/index.js';

export function sameUsing(real: Redlock, standIn: RedlockTestingService, onBusy: 'wait' | 'skip'): void {
  const fn = (): number => 1;
  const waited: Promise<number>[] = [real.using('r', 1_000, fn), standIn.using('r', 1_000, fn)];
  const waitedToo: Promise<number>[] = [
    real.using('r', 1_000, fn, { onBusy: 'wait' }),
    standIn.using('r', 1_000, fn, { onBusy: 'wait' }),
  ];
  const skipped: Promise<number | undefined>[] = [
    real.using('r', 1_000, fn, { onBusy: 'skip' }),
    standIn.using('r', 1_000, fn, { onBusy: 'skip' }),
  ];
  // @ts-expect-error `onBusy: 'skip'` may resolve to undefined
  const notSkipped: Promise<number> = real.using('r', 1_000, fn, { onBusy: 'skip' });
  // @ts-expect-error the same for the stand-in
  const notSkippedToo: Promise<number> = standIn.using('r', 1_000, fn, { onBusy: 'skip' });
  const either: Promise<number | undefined>[] = [
    real.using('r', 1_000, fn, { onBusy }),
    standIn.using('r', 1_000, fn, { onBusy }),
  ];
  void [waited, waitedToo, skipped, notSkipped, notSkippedToo, either];
}
