import { Catch, HttpStatus, type ArgumentsHost, type ExceptionFilter } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { LockAcquisitionError, LockKeyError, LockLostError, RedlockError } from 'nestjs-quorum-lock';

/**
 * Maps the lock library's errors to HTTP answers:
 * - `LockAcquisitionError` with `busy` (another buyer holds the lock) → 409 "lock-busy";
 * - `LockAcquisitionError` without `busy` (no quorum of masters answered) → 503 "lock-unavailable";
 * - `LockLostError` (the lock could not be kept while the sale ran) → 503 "lock-lost";
 * - `LockKeyError` (the route parameter made no usable key) → 400 "bad-lock-key";
 * - any other `RedlockError` (e.g. the app is shutting down) → 503 "lock-unavailable".
 */
@Catch(RedlockError)
export class LockBusyFilter implements ExceptionFilter {
  constructor(private readonly adapterHost: HttpAdapterHost) {}

  catch(error: RedlockError, host: ArgumentsHost): void {
    const { statusCode, ...body } = this.describe(error);
    this.adapterHost.httpAdapter.reply(host.switchToHttp().getResponse(), { statusCode, ...body, message: error.message }, statusCode);
  }

  private describe(error: RedlockError): { statusCode: number; reason: string; [detail: string]: unknown } {
    if (error instanceof LockAcquisitionError) {
      return {
        statusCode: error.busy ? HttpStatus.CONFLICT : HttpStatus.SERVICE_UNAVAILABLE,
        reason: error.busy ? 'lock-busy' : 'lock-unavailable',
        resources: error.resources,
        attempts: error.attempts,
        masters: error.outcomes.map(({ master, status }) => ({ master, status })),
      };
    }
    if (error instanceof LockLostError) {
      return { statusCode: HttpStatus.SERVICE_UNAVAILABLE, reason: 'lock-lost', resources: error.resources };
    }
    if (error instanceof LockKeyError) return { statusCode: HttpStatus.BAD_REQUEST, reason: 'bad-lock-key' };
    return { statusCode: HttpStatus.SERVICE_UNAVAILABLE, reason: 'lock-unavailable' };
  }
}
