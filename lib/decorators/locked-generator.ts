interface Step {
  readonly kind: 'next' | 'return' | 'throw';
  readonly value: unknown;
  readonly resolve: (result: IteratorResult<unknown>) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * An async generator whose whole run happens inside `hold`, which keeps a lock while the promise it
 * is given is pending: from the first `next()` until the source returns, throws or is closed early
 * (`return()`, `break` in `for await`). Every step of the source runs in the lock's async context.
 * The final step (done, or the source's error) settles only after `hold` has (the lock released;
 * `LockLostError` if it was lost meanwhile). A generator closed before its first `next()` never
 * takes the lock; one that `hold` skips (`onBusy: 'skip'`) is done at once.
 */
export function lockedAsyncGenerator(
  hold: (body: () => Promise<IteratorResult<unknown>>) => Promise<IteratorResult<unknown> | undefined>,
  create: () => AsyncGenerator<unknown, unknown, unknown>,
): AsyncGenerator<unknown, unknown, unknown> {
  const steps: Step[] = [];
  let wake: (() => void) | undefined;
  let state: 'idle' | 'running' | 'done' = 'idle';
  let finalStep: Step | undefined;

  const nextStep = async (): Promise<Step> => {
    while (steps.length === 0) await new Promise<void>((resolve) => (wake = resolve));
    return steps.shift()!;
  };

  const finish = (settle: (step: Step) => void): void => {
    state = 'done';
    const last = finalStep ?? steps.shift();
    if (last) settle(last);
    // Steps queued behind the last one see a finished generator, as with a native one.
    for (const step of steps.splice(0)) {
      if (step.kind === 'throw') step.reject(step.value);
      else step.resolve({ done: true, value: step.kind === 'return' ? step.value : undefined });
    }
  };

  const start = (): void => {
    // A refusal thrown by `hold` itself (no service, a bad key) settles the first step like any error.
    const held = (body: () => Promise<IteratorResult<unknown>>): Promise<IteratorResult<unknown> | undefined> => {
      try {
        return hold(body);
      } catch (error) {
        return Promise.reject(error);
      }
    };
    held(async () => {
      const source = create();
      for (;;) {
        const step = await nextStep();
        let result: IteratorResult<unknown>;
        try {
          result = await (step.kind === 'next'
            ? source.next(step.value)
            : step.kind === 'return'
              ? source.return(step.value)
              : source.throw(step.value));
        } catch (error) {
          finalStep = step;
          throw error;
        }
        if (result.done) {
          finalStep = step;
          return result;
        }
        step.resolve(result);
      }
    }).then(
      (result) => finish((step) => step.resolve(result ?? { done: true, value: undefined })),
      (error: unknown) => finish((step) => step.reject(error)),
    );
  };

  const request = (kind: Step['kind'], value: unknown): Promise<IteratorResult<unknown>> =>
    new Promise((resolve, reject) => {
      if (state === 'idle' && kind !== 'next') state = 'done'; // closed before it started: no lock taken
      if (state === 'done') {
        if (kind === 'throw') reject(value);
        else resolve({ done: true, value: kind === 'return' ? value : undefined });
        return;
      }
      steps.push({ kind, value, resolve, reject });
      if (state === 'idle') {
        state = 'running';
        start();
      }
      const woken = wake;
      wake = undefined;
      woken?.();
    });

  const generator = {
    next: (value?: unknown) => request('next', value),
    return: (value?: unknown) => request('return', value),
    throw: (error?: unknown) => request('throw', error),
    [Symbol.asyncIterator]() {
      return generator;
    },
    async [Symbol.asyncDispose]() {
      await generator.return(undefined);
    },
  };
  return generator;
}
