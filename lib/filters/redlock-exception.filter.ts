import { Catch, HttpStatus, Inject, Optional, type ArgumentsHost, type ExceptionFilter } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { throwError, type Observable } from 'rxjs';
import { quote } from '../errors/quote.js';
import { LockAcquisitionError } from '../errors/lock-acquisition.error.js';
import { LockKeyError } from '../errors/lock-key.error.js';
import { LockLostError } from '../errors/lock-lost.error.js';
import { RedlockError } from '../errors/redlock.error.js';
import { graphqlErrorOf } from './graphql-error.js';

/** The answer `RedlockExceptionFilter` gives for an error, in every context. */
export interface RedlockHttpAnswer {
  /** The HTTP status (HTTP only). */
  statusCode: number;
  /** A stable code: `lock-busy`, `lock-unavailable`, `lock-lost`, `bad-lock-key`. */
  reason: string;
  /** A message for the client; it never names masters, hosts or ports. */
  message: string;
  /** Seconds for the `Retry-After` header, when the restart guard says how long the masters are distrusted (HTTP only). */
  retryAfter?: number;
}

/** What an RPC or WebSocket client receives: Nest's `{ status: 'error', message }` with the reason. */
interface TransportAnswer {
  status: 'error';
  reason: string;
  message: string;
}

/** A WebSocket client: a socket.io socket (`emit`) or a native one (`send`, numeric `readyState`). */
interface WsClient {
  emit?: (event: string, payload: unknown) => unknown;
  send?: (data: string) => unknown;
  readyState?: unknown;
}

/**
 * Answers the library's errors in every Nest context, with the same reasons everywhere and never
 * a master's address, a password or a stack:
 * - `LockAcquisitionError` with `busy` (another holder has the lock) → `lock-busy`, HTTP **409**;
 * - `LockAcquisitionError` without `busy` (no quorum of masters answered) → `lock-unavailable`,
 *   HTTP **503**, with `Retry-After` when masters were distrusted by the restart guard and the
 *   error says for how long;
 * - `LockLostError` (the lock could not be kept while the work ran, so exclusion was not guaranteed
 *   and the work's outcome is unknown) → `lock-lost`, HTTP **503** without `Retry-After`: check
 *   the state before retrying;
 * - `LockKeyError` (a request value made no usable key) → `bad-lock-key`, HTTP **400**;
 * - any other `RedlockError` (e.g. the application is shutting down) → `lock-unavailable`, **503**.
 *
 * Each context gets its own shape:
 * - **HTTP** (Express, Fastify, through `HttpAdapterHost`): status and body `{ statusCode, reason, message }`;
 * - **RPC** (microservices): the client's Observable errors with `{ status: 'error', reason, message }`;
 * - **WebSocket**: the client's `exception` event carries `{ status: 'error', reason, message }`.
 *   Nest applies no global filter to gateways: put `@UseFilters(RedlockExceptionFilter)` on the gateway;
 * - **GraphQL** (Apollo, Mercurius): a `GraphQLError` whose `extensions` are `{ code, reason }`,
 *   `code` being `LOCK_BUSY`, `LOCK_UNAVAILABLE`, `LOCK_LOST` or `BAD_LOCK_KEY`. The `graphql`
 *   package is loaded only there.
 *
 * Outside HTTP the message names the resources (not the masters). Override `answer()` to change
 * statuses, reasons or messages in every context. Other contexts rethrow.
 *
 * @example
 * // main.ts (HTTP and GraphQL): or in a module, providers: [{ provide: APP_FILTER, useClass: RedlockExceptionFilter }]
 * app.useGlobalFilters(new RedlockExceptionFilter(app.get(HttpAdapterHost)));
 * // a microservice: microservice.useGlobalFilters(new RedlockExceptionFilter());
 * // a gateway: @UseFilters(RedlockExceptionFilter) @WebSocketGateway() class EventsGateway {}
 * @publicApi
 */
@Catch(RedlockError)
export class RedlockExceptionFilter implements ExceptionFilter<RedlockError> {
  /** @param adapterHost needed for HTTP; a microservice or gateway may go without. */
  constructor(@Optional() @Inject(HttpAdapterHost) private readonly adapterHost?: HttpAdapterHost) {}

  /**
   * Answers `error` in the shape of `host`'s context: replies over HTTP, returns the failing
   * Observable Nest sends to an RPC client, emits `exception` to a WebSocket client, rejects with
   * a `GraphQLError` in a resolver; rethrows in any other context.
   */
  catch(error: RedlockError, host: ArgumentsHost): Observable<never> | Promise<never> | void {
    const context = host.getType<string>();
    switch (context) {
      case 'http':
        return this.#replyHttp(error, host);
      case 'rpc':
        // Nest sends the Observable's error to the client as it is: a plain, serialisable object.
        return throwError(() => transportAnswer(this.answer(error, context)));
      case 'ws':
        return emitException(host.switchToWs().getClient<WsClient>(), transportAnswer(this.answer(error, context)));
      case 'graphql': {
        const { reason, message } = this.answer(error, context);
        return graphqlErrorOf(message, reason, host.getArgByIndex<unknown>(3)).then((graphqlError) => {
          throw graphqlError;
        });
      }
      default:
        throw error;
    }
  }

  #replyHttp(error: RedlockError, host: ArgumentsHost): void {
    const httpAdapter = this.adapterHost?.httpAdapter;
    if (!httpAdapter) throw error; // constructed without HttpAdapterHost: Nest answers as for any error
    const response: unknown = host.switchToHttp().getResponse();
    const { retryAfter, ...body } = this.answer(error, 'http');
    if (retryAfter !== undefined) httpAdapter.setHeader(response, 'Retry-After', String(retryAfter));
    httpAdapter.reply(response, body, body.statusCode);
  }

  /**
   * The status, reason and message for `error` in `context` (`host.getType()`: `'http'`, `'rpc'`,
   * `'ws'`, `'graphql'`). HTTP messages name no resource; the others name the resources.
   */
  protected answer(error: RedlockError, context = 'http'): RedlockHttpAnswer {
    const resources = context === 'http' ? undefined : resourcesOf(error);
    if (error instanceof LockAcquisitionError) {
      if (error.busy)
        return {
          statusCode: HttpStatus.CONFLICT,
          reason: 'lock-busy',
          message: resources
            ? `The lock on ${resources} is held by another holder; try again later.`
            : 'The resource is locked by another request; try again later.',
        };
      return {
        statusCode: HttpStatus.SERVICE_UNAVAILABLE,
        reason: 'lock-unavailable',
        message: resources
          ? `Could not lock ${resources}: locks are unavailable right now; try again later.`
          : 'Locks are unavailable right now; try again later.',
        retryAfter: retryAfterOf(error),
      };
    }
    if (error instanceof LockLostError) {
      return {
        statusCode: HttpStatus.SERVICE_UNAVAILABLE,
        reason: 'lock-lost',
        message: resources
          ? `The lock on ${resources} was lost while the handler ran; its outcome is not guaranteed.`
          : 'The lock was lost while the request ran; its outcome is not guaranteed.',
      };
    }
    if (error instanceof LockKeyError)
      return {
        statusCode: HttpStatus.BAD_REQUEST,
        reason: 'bad-lock-key',
        message:
          context === 'http'
            ? 'The request did not name a lockable resource.'
            : 'The message did not name a lockable resource.',
      };
    return {
      statusCode: HttpStatus.SERVICE_UNAVAILABLE,
      reason: 'lock-unavailable',
      message: 'Locks are unavailable right now; try again later.',
    };
  }
}

/** The RPC and WebSocket payload of an answer: no status code, no Retry-After. */
function transportAnswer({ reason, message }: RedlockHttpAnswer): TransportAnswer {
  return { status: 'error', reason, message };
}

/** Sends the `exception` event as Nest's own WebSocket filter does, to socket.io and native clients alike. */
function emitException(client: WsClient, payload: TransportAnswer): void {
  if (typeof client.readyState === 'number' && typeof client.send === 'function')
    client.send(JSON.stringify({ event: 'exception', data: payload }));
  else client.emit?.('exception', payload);
}

/** The quoted resources of an error that has them (`"a", "b"`), else undefined. */
function resourcesOf(error: RedlockError): string | undefined {
  const { resources } = error as { resources?: unknown };
  if (!Array.isArray(resources) || resources.length === 0) return undefined;
  return quote(resources.filter((r): r is string => typeof r === 'string'));
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
