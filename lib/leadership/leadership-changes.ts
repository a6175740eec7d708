import { Observable } from 'rxjs';

/** What the rxjs face reads of a leadership: its state now, its changes and its end. */
export interface LeadershipState {
  readonly isLeader: boolean;
  onChange(listener: (leading: boolean) => void): () => void;
  onEnd(complete: () => void): () => void;
}

/**
 * The rxjs face of a leadership's state: emits the current state on subscription, then every change,
 * and completes once the campaign has ended. Kept apart so that `leadership.ts` has no rxjs import.
 *
 * @example
 * leadershipChanges(leadership).subscribe((leading) => console.log(leading ? 'leading' : 'standing by'));
 */
export function leadershipChanges(leadership: LeadershipState): Observable<boolean> {
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
