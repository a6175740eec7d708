import { Catch, HttpStatus, Inject, type ArgumentsHost, type ExceptionFilter } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { LockAcquisitionError } from '../errors/lock-acquisition.error.js';
import { LockKeyError } from '../errors/lock-key.error.js';
import { LockLostError } from '../errors/lock-lost.error.js';
import { RedlockError } from '../errors/redlock.error.js';

/** The HTTP answer `RedlockExceptionFilter` gives for an error. */
export interface RedlockHttpAnswer {
  /** The HTTP status. */
  statusCode: number;
  /** A stable code: `lock-busy`, `lock-unavailable`, `lock-lost`, `bad-lock-key`. */
  reason: string;
  /** A message for the client; it never names masters, hosts or ports. */
  message: string;
  /** Seconds for the `Retry-After` header, when the restart guard says how long the masters are distrusted. */
  retryAfter?: number;
}

/**
 * Answers the library's errors over HTTP, on any HTTP adapter (Express, Fastify) through
 * `HttpAdapterHost`:
 * - `LockAcquisitionError` with `busy` (another holder has the lock) → **409** `lock-busy`;
 * - `LockAcquisitionError` without `busy` (no quorum of masters answered) → **503**
 *   `lock-unavailable`, with `Retry-After` when masters were distrusted by the restart guard and the
 *   error says for how long;
 * - `LockLostError` (the lock could not be kept while the work ran, so exclusion was not guaranteed
 *   and the work's outcome is unknown) → **503** `lock-lost`, without `Retry-After`: check the
 *   state before retrying;
 * - `LockKeyError` (a request value made no usable key) → **400** `bad-lock-key`;
 * - any other `RedlockError` (e.g. the application is shutting down) → **503** `lock-unavailable`.
 *
 * The body is `{ statusCode, reason, message }`; the error's own message, which names the masters,
 * is not sent. Override `answer()` to change statuses or bodies. Other contexts than HTTP rethrow.
 *
 * @example
 * // main.ts
 * app.useGlobalFilters(new RedlockExceptionFilter(app.get(HttpAdapterHost)));
 * // or in a module: providers: [{ provide: APP_FILTER, useClass: RedlockExceptionFilter }]
 * @publicApi
 */
@Catch(RedlockError)
export class RedlockExceptionFilter implements ExceptionFilter<RedlockError> {
  constructor(@Inject(HttpAdapterHost) private readonly adapterHost: HttpAdapterHost) {}

  catch(error: RedlockError, host: ArgumentsHost): void {
    if (host.getType() !== 'http') throw error;
    const { httpAdapter } = this.adapterHost;
    const response: unknown = host.switchToHttp().getResponse();
    const { retryAfter, ...body } = this.answer(error);
    if (retryAfter !== undefined) httpAdapter.setHeader(response, 'Retry-After', String(retryAfter));
    httpAdapter.reply(response, body, body.statusCode);
  }

  /** The status, reason and message for `error`. */
  protected answer(error: RedlockError): RedlockHttpAnswer {
    if (error instanceof LockAcquisitionError) {
      if (error.busy)
        return {
          statusCode: HttpStatus.CONFLICT,
          reason: 'lock-busy',
          message: 'The resource is locked by another request; try again later.',
        };
      return {
        statusCode: HttpStatus.SERVICE_UNAVAILABLE,
        reason: 'lock-unavailable',
        message: 'Locks are unavailable right now; try again later.',
        retryAfter: retryAfterOf(error),
      };
    }
    if (error instanceof LockLostError) {
      return {
        statusCode: HttpStatus.SERVICE_UNAVAILABLE,
        reason: 'lock-lost',
        message: 'The lock was lost while the request ran; its outcome is not guaranteed.',
      };
    }
    if (error instanceof LockKeyError)
      return {
        statusCode: HttpStatus.BAD_REQUEST,
        reason: 'bad-lock-key',
        message: 'The request did not name a lockable resource.',
      };
    return {
      statusCode: HttpStatus.SERVICE_UNAVAILABLE,
      reason: 'lock-unavailable',
      message: 'Locks are unavailable right now; try again later.',
    };
  }
}

/**
 * Whole seconds until the masters the restart guard kept out count again: the largest
 * `distrustedFor` among the outcomes, rounded up. Undefined when no outcome says.
 */
function retryAfterOf(error: LockAcquisitionError): number | undefined {
  let longest = 0;
  for (const outcome of error.outcomes as readonly { distrustedFor?: unknown }[]) {
    const left = outcome.distrustedFor;
    if (typeof left === 'number' && Number.isFinite(left) && left > longest) longest = left;
  }
  return longest > 0 ? Math.ceil(longest / 1000) : undefined;
}
