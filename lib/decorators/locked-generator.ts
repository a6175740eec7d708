interface Step {
  readonly kind: 'next' | 'return' | 'throw';
  readonly value: unknown;
  readonly resolve: (result: IteratorResult<unknown>) => void;
  readonly reject: (error: unknown) => void;
}

/** What a finished generator answers to a step, as a native one does: done, or the error thrown into it. */
function answerFinished(step: Step): void {
  if (step.kind === 'throw') step.reject(step.value);
  else step.resolve({ done: true, value: step.kind === 'return' ? step.value : undefined });
}

/**
 * Creates the source and feeds it the queued steps, one at a time, until it is done or throws;
 * `onLast` learns the step that ended it (settled later, once the lock is released).
 */
async function runSteps(
  create: () => AsyncGenerator<unknown, unknown, unknown>,
  nextStep: () => Promise<Step>,
  onLast: (step: Step) => void,
): Promise<IteratorResult<unknown>> {
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
      onLast(step);
      throw error;
    }
    if (result.done) {
      onLast(step);
      return result;
    }
    step.resolve(result);
  }
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
    for (const step of steps.splice(0)) answerFinished(step);
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
    held(() => runSteps(create, nextStep, (step) => (finalStep = step))).then(
      (result) => finish((step) => step.resolve(result ?? { done: true, value: undefined })),
      (error: unknown) => finish((step) => step.reject(error)),
    );
  };

  const request = (kind: Step['kind'], value: unknown): Promise<IteratorResult<unknown>> =>
    new Promise((resolve, reject) => {
      if (state === 'idle' && kind !== 'next') state = 'done'; // closed before it started: no lock taken
      const step: Step = { kind, value, resolve, reject };
      if (state === 'done') return answerFinished(step);
      steps.push(step);
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
