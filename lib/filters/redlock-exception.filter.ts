import {
  Catch,
  HttpStatus,
  Inject,
  Logger,
  Optional,
  type ArgumentsHost,
  type ContextType,
  type ExceptionFilter,
} from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { throwError, type Observable } from 'rxjs';
import { quote } from '../errors/quote.js';
import { LockAcquisitionError } from '../errors/lock-acquisition.error.js';
import { LockKeyError } from '../errors/lock-key.error.js';
import { LockLostError } from '../errors/lock-lost.error.js';
import { RedlockError } from '../errors/redlock.error.js';
import { graphqlErrorOf } from './graphql-error.js';

/**
 * The answer `RedlockExceptionFilter` gives for an error, in every context: HTTP uses all of it,
 * RPC and WebSocket send `{ status: 'error', reason, message }`, GraphQL `message` with
 * `extensions.reason`.
 *
 * @example
 * const answer: RedlockHttpAnswer = { statusCode: 429, reason: 'lock-busy', message: 'Busy; retry in a second.', retryAfter: 1 };
 * @publicApi
 */
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

/**
 * The context `RedlockExceptionFilter.answer()` answers in: `host.getType()`, one of Nest's
 * `ContextType`s or `'graphql'` (the `@nestjs/graphql` context). Any other string is a custom
 * transport's (and keeps overrides typed `context?: string` compiling).
 *
 * @example
 * const context: RedlockAnswerContext = host.getType<RedlockAnswerContext>();
 * @publicApi
 */
export type RedlockAnswerContext = ContextType | 'graphql' | (string & {});

/** Express's response (`status().json()`), Fastify's reply (`code().send()`) or Node's own. */
interface HttpResponse {
  status?: (code: number) => HttpResponse;
  json?: (body: unknown) => unknown;
  code?: (code: number) => HttpResponse;
  header?: (name: string, value: string) => unknown;
  send?: (body: unknown) => unknown;
  setHeader?: (name: string, value: string) => unknown;
  writeHead?: (code: number, headers: Record<string, string>) => unknown;
  end?: (body: string) => unknown;
  headersSent?: boolean;
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
 * - **HTTP** (Express, Fastify; through `HttpAdapterHost`, or the response object itself when built
 *   without it): status and body `{ statusCode, reason, message }`;
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
  /**
   * @param adapterHost replies over HTTP through Nest's adapter. Without it (`new RedlockExceptionFilter()`)
   *   the filter replies through Express's or Fastify's response object itself.
   */
  constructor(@Optional() @Inject(HttpAdapterHost) private readonly adapterHost?: HttpAdapterHost) {}

  /**
   * Answers `error` in the shape of `host`'s context: replies over HTTP, returns the failing
   * Observable Nest sends to an RPC client, emits `exception` to a WebSocket client, rejects with
   * a `GraphQLError` in a resolver; rethrows in any other context. A subclass that overrides it
   * must `return super.catch(error, host)`: RPC and GraphQL answer through the returned value.
   *
   * @example
   * \@Catch(RedlockError)
   * class AuditedRedlockFilter extends RedlockExceptionFilter {
   *   catch(error: RedlockError, host: ArgumentsHost) {
   *     audit.record(error.name);
   *     return super.catch(error, host);
   *   }
   * }
   */
  catch(error: RedlockError, host: ArgumentsHost): Observable<never> | Promise<never> | void {
    const context = host.getType<RedlockAnswerContext>();
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
    const response: unknown = host.switchToHttp().getResponse();
    const { retryAfter, ...body } = this.answer(error, 'http');
    if (httpAdapter) {
      if (retryAfter !== undefined) httpAdapter.setHeader(response, 'Retry-After', String(retryAfter));
      httpAdapter.reply(response, body, body.statusCode);
      return;
    }
    // Built without HttpAdapterHost (`new RedlockExceptionFilter()` in main.ts): reply as the adapter would.
    if (replyDirectly(response as HttpResponse, body, retryAfter)) return;
    if (!warnedNoAdapter) {
      warnedNoAdapter = true;
      new Logger('RedlockExceptionFilter').warn(
        'RedlockExceptionFilter cannot reply on this HTTP server without HttpAdapterHost, so lock errors ' +
          "get Nest's 500: use app.useGlobalFilters(new RedlockExceptionFilter(app.get(HttpAdapterHost))) " +
          'or provide it as APP_FILTER.',
      );
    }
    throw error;
  }

  /**
   * The status, reason and message for `error` in `context` (`host.getType()`). HTTP messages name
   * no resource; the others name the resources. Override it to change any of them, per context.
   *
   * @example
   * \@Catch(RedlockError)
   * class TooManyRequestsFilter extends RedlockExceptionFilter {
   *   protected answer(error: RedlockError, context?: RedlockAnswerContext): RedlockHttpAnswer {
   *     const answer = super.answer(error, context);
   *     if (answer.reason !== 'lock-busy') return answer;
   *     return context === 'http' ? { ...answer, statusCode: 429, retryAfter: 1 } : { ...answer, message: 'Busy: retry.' };
   *   }
   * }
   */
  protected answer(error: RedlockError, context: RedlockAnswerContext = 'http'): RedlockHttpAnswer {
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

/** One warning per process when the filter cannot reply over HTTP: the fix is the same everywhere. */
let warnedNoAdapter = false;

/**
 * Replies with `body` through Express's or Fastify's response object, or Node's own, the way Nest's
 * adapters do. False when `response` is none of them.
 */
function replyDirectly(response: HttpResponse, body: object & { statusCode: number }, retryAfter?: number): boolean {
  if (typeof response !== 'object' || response === null) return false;
  const retry = retryAfter === undefined ? undefined : String(retryAfter);
  if (typeof response.code === 'function' && typeof response.send === 'function') {
    // Fastify's reply (Express's response has no `code`)
    if (retry !== undefined) response.header?.('Retry-After', retry);
    response.code(body.statusCode).send?.(body);
    return true;
  }
  if (typeof response.status === 'function' && typeof response.json === 'function') {
    if (retry !== undefined) response.setHeader?.('Retry-After', retry);
    response.status(body.statusCode).json?.(body);
    return true;
  }
  if (typeof response.writeHead === 'function' && typeof response.end === 'function' && !response.headersSent) {
    response.writeHead(body.statusCode, {
      'Content-Type': 'application/json; charset=utf-8',
      ...(retry === undefined ? {} : { 'Retry-After': retry }),
    });
    response.end(JSON.stringify(body));
    return true;
  }
  return false;
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
