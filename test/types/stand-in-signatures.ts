/**
 * Type test (compiled by `npm run typecheck`, never run): the testing stand-in's `using()` resolves
 * to the same types as the real service's, overload for overload. TypeScript gives a class method
 * its overloads only from the class body, so both classes write the three overloads
 * (docs/decisions.md, polish2); a drift in either fails the type check here.
 */
import type { Redlock } from '../../lib/index.js';
import type { RedlockTestingService } from '../../lib/testing/index.js';

export function real(redlock: Redlock): void {
  const waited: Promise<number> = redlock.using('r', 1_000, () => 1);
  const waitedToo: Promise<number> = redlock.using('r', 1_000, () => 1, { onBusy: 'wait' });
  const skipped: Promise<number | undefined> = redlock.using('r', 1_000, () => 1, { onBusy: 'skip' });
  // @ts-expect-error `onBusy: 'skip'` may resolve to undefined
  const notSkipped: Promise<number> = redlock.using('r', 1_000, () => 1, { onBusy: 'skip' });
  const either = (onBusy: 'wait' | 'skip'): Promise<number | undefined> =>
    redlock.using('r', 1_000, () => 1, { onBusy });
  void [waited, waitedToo, skipped, notSkipped, either];
}

export function standIn(redlock: RedlockTestingService): void {
  const waited: Promise<number> = redlock.using('r', 1_000, () => 1);
  const waitedToo: Promise<number> = redlock.using('r', 1_000, () => 1, { onBusy: 'wait' });
  const skipped: Promise<number | undefined> = redlock.using('r', 1_000, () => 1, { onBusy: 'skip' });
  // @ts-expect-error `onBusy: 'skip'` may resolve to undefined
  const notSkipped: Promise<number> = redlock.using('r', 1_000, () => 1, { onBusy: 'skip' });
  const either = (onBusy: 'wait' | 'skip'): Promise<number | undefined> =>
    redlock.using('r', 1_000, () => 1, { onBusy });
  void [waited, waitedToo, skipped, notSkipped, either];
}
