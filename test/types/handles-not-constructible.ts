/**
 * Type test (compiled by `npm run typecheck`, never run): `Lock` and `Leadership` handles come from
 * `Redlock` only. Their constructors are private, so the published declarations (built with
 * `stripInternal`) do not show them as constructible. If a constructor became public again,
 * `PublicConstructor<…>` would be `true`, the assignments below would not type-check, and tsc would fail.
 */
import type { Leadership, Lock } from '../../lib/index.js';

type PublicConstructor<T> = T extends abstract new (...args: never[]) => unknown ? true : false;

export const lockHasNoPublicConstructor: PublicConstructor<typeof Lock> = false;
export const leadershipHasNoPublicConstructor: PublicConstructor<typeof Leadership> = false;
