/**
 * One field of an `INFO` reply (or of several combined), or undefined when the reply lacks it. The
 * restart guard, the cluster's shard reading and the CLI's `masters` read `INFO` through it, so
 * they agree on what a server said.
 *
 * @example
 * infoField(await client.info('server'), 'run_id'); // '6f1c…'
 */
export function infoField(info: string, name: string): string | undefined {
  return new RegExp(`^${name}:([^\\r\\n]*)`, 'm').exec(info)?.[1];
}
