import { Observable } from 'rxjs';
import type { Leadership } from './leadership.js';

/**
 * The rxjs face of a leadership's state: emits the current state on subscription, then every change,
 * and completes once the campaign has ended. Kept apart so that `leadership.ts` has no rxjs import.
 *
 * @example
 * leadershipChanges(leadership).subscribe((leading) => console.log(leading ? 'leading' : 'standing by'));
 */
export function leadershipChanges(leadership: Leadership): Observable<boolean> {
  return new Observable<boolean>((subscriber) => {
    subscriber.next(leadership.isLeader);
    const off = leadership.onChange((leading) => subscriber.next(leading));
    const offEnd = leadership.onEnd(() => subscriber.complete());
    return () => {
      off();
      offEnd();
    };
  });
}
