import { createRequire } from 'node:module';
import type { Observable } from 'rxjs';

/** What the rxjs face reads of a leadership: its state now, its changes and its end. */
export interface LeadershipState {
  readonly isLeader: boolean;
  onChange(listener: (leading: boolean) => void): () => void;
  onEnd(complete: () => void): () => void;
}

type Rxjs = typeof import('rxjs');
let rxjs: Rxjs | undefined;

/**
 * rxjs, loaded the first time `changes` is read, so that the core entry loads none of it for code
 * that never reads `changes`. Synchronous, as the getter is: resolved from this file's location.
 * The CommonJS build puts this file's own URL in place of import.meta's (scripts/build.mjs).
 */
function loadRxjs(): Rxjs {
  // eslint-disable-next-line @typescript-eslint/ban-ts-comment -- an error of the CommonJS compile only, whose build rewrites it
  // @ts-ignore TS1343 in the CommonJS compile: import.meta is replaced there
  const here: string = import.meta.url;
  return (rxjs ??= createRequire(here)('rxjs') as Rxjs);
}

/**
 * The rxjs face of a leadership's state: emits the current state on subscription, then every change,
 * and completes once the campaign has ended. Kept apart so that `leadership.ts` has no rxjs import.
 *
 * @example
 * leadershipChanges(leadership).subscribe((leading) => console.log(leading ? 'leading' : 'standing by'));
 */
export function leadershipChanges(leadership: LeadershipState): Observable<boolean> {
  return new (loadRxjs().Observable)<boolean>((subscriber) => {
    subscriber.next(leadership.isLeader);
    const off = leadership.onChange((leading) => subscriber.next(leading));
    const offEnd = leadership.onEnd(() => subscriber.complete());
    return () => {
      off();
      offEnd();
    };
  });
}
