/**
 * Bad command-line usage: the CLI prints its message (naming the argument) and the usage text,
 * and exits 2, before anything is sent to a master.
 *
 * @example
 * if (!values.nodes) throw new UsageError('--nodes is required');
 */
export class UsageError extends Error {}
