import { Observable } from 'rxjs';

/**
 * Runs a subscription to `source` inside `hold`, which keeps a lock for as long as the promise it is
 * given is pending: from subscription until the source completes, errors or is unsubscribed. The
 * subscriber completes or errors only after `hold` settles (the lock released; `LockLostError` if it
 * was lost meanwhile; the source's own error unchanged).
 */
export function lockedObservable<T>(
  hold: (body: () => Promise<void>) => Promise<unknown>,
  source: () => Observable<T>,
): Observable<T> {
  return new Observable<T>((subscriber) => {
    let stop: (() => void) | undefined;
    let unsubscribed = false;
    hold(
      () =>
        new Promise<void>((done, fail) => {
          if (unsubscribed) return done();
          const inner = source().subscribe({ next: (v) => subscriber.next(v), error: fail, complete: done });
          stop = () => {
            inner.unsubscribe();
            done();
          };
          if (unsubscribed) stop();
        }),
    ).then(
      () => subscriber.complete(),
      (error: unknown) => subscriber.error(error),
    );
    return () => {
      unsubscribed = true;
      stop?.();
    };
  });
}

/**
 * For an Observable met only at run time (the method's return type was not declared `Observable`):
 * the lock is already held, so the first subscription keeps it until the source completes, errors or
 * is unsubscribed, and its subscriber settles once `held()` has (the lock released). If nobody
 * subscribes within `unclaimedMs`, the lock is released anyway. Later subscriptions go through
 * `relocked`, which takes the lock anew.
 */
export function heldObservable<T>(
  source: Observable<T>,
  done: () => void,
  fail: (error: unknown) => void,
  held: () => Promise<unknown>,
  relocked: Observable<T>,
  unclaimedMs: number,
): Observable<T> {
  let claimed = false;
  const unclaimed = setTimeout(() => {
    claimed = true;
    done();
  }, unclaimedMs);
  unclaimed.unref();
  return new Observable<T>((subscriber) => {
    if (claimed) return relocked.subscribe(subscriber);
    claimed = true;
    clearTimeout(unclaimed);
    const inner = source.subscribe({ next: (v) => subscriber.next(v), error: fail, complete: done });
    held().then(
      () => subscriber.complete(),
      (error: unknown) => subscriber.error(error),
    );
    return () => {
      inner.unsubscribe();
      done();
    };
  });
}
