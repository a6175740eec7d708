/**
 * The GraphQL shape of `RedlockExceptionFilter`'s answer. The `graphql` package is an optional
 * peer: it is imported the first time a GraphQL resolver fails on a lock, never before, so HTTP,
 * RPC and WebSocket apps do not need it.
 */

/** The part of `graphql`'s `GraphQLResolveInfo` that locates an error in the response. */
interface ResolveInfo {
  fieldNodes?: readonly unknown[];
  path?: ResponsePath;
}

/** `graphql`'s linked list from a field to the root of the response. */
interface ResponsePath {
  readonly prev: ResponsePath | undefined;
  readonly key: string | number;
}

/** The constructor of `graphql`'s `GraphQLError` (16 and 17). */
type GraphQLErrorClass = new (
  message: string,
  options: { nodes?: unknown; path?: readonly (string | number)[]; extensions?: Record<string, unknown> },
) => Error & { extensions: Record<string, unknown> };

let loaded: Promise<GraphQLErrorClass | undefined> | undefined;

/** `GraphQLError` from the application's `graphql` package, imported once; undefined without it. */
function loadGraphQLError(): Promise<GraphQLErrorClass | undefined> {
  const name = 'graphql';
  loaded ??= (
    import(name) as Promise<{ GraphQLError?: GraphQLErrorClass; default?: { GraphQLError?: GraphQLErrorClass } }>
  ).then(
    (graphql) => graphql.GraphQLError ?? graphql.default?.GraphQLError,
    () => undefined,
  );
  return loaded;
}

/**
 * `LOCK_BUSY` for `lock-busy`: the `extensions.code` of a reason, in the upper-case style of
 * GraphQL servers' own codes (`BAD_USER_INPUT`, `INTERNAL_SERVER_ERROR`).
 *
 * @example
 * graphqlCodeOf('bad-lock-key'); // 'BAD_LOCK_KEY'
 */
export function graphqlCodeOf(reason: string): string {
  return reason.toUpperCase().replace(/[^A-Z0-9]+/g, '_');
}

/**
 * A `GraphQLError` with `extensions: { code, reason }`, located at the resolver's field (`info`,
 * the resolver's fourth argument), so GraphQL servers send it as it is. It carries no stack:
 * Apollo copies an error's stack into `extensions.stacktrace` outside production, and the
 * client has no use for the library's frames.
 *
 * @example
 * throw await graphqlErrorOf('The lock on "order:7" is held by another holder', 'lock-busy', info);
 */
export async function graphqlErrorOf(message: string, reason: string, info: unknown): Promise<Error> {
  const extensions = { code: graphqlCodeOf(reason), reason };
  const located = (info ?? {}) as ResolveInfo;
  const GraphQLError = await loadGraphQLError();
  // Without the package (a GraphQL context always has it), servers wrap any error and keep its `extensions`.
  const error = GraphQLError
    ? new GraphQLError(message, { nodes: located.fieldNodes, path: pathOf(located.path), extensions })
    : Object.assign(new Error(message), { extensions });
  Object.defineProperty(error, 'stack', { value: undefined, writable: true, configurable: true });
  return error;
}

/** `['order', 0, 'pay']` from a response path; undefined without one. */
function pathOf(path: ResponsePath | undefined): (string | number)[] | undefined {
  if (!path) return undefined;
  const keys: (string | number)[] = [];
  for (let at: ResponsePath | undefined = path; at; at = at.prev) keys.unshift(at.key);
  return keys;
}
