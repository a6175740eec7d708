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

/**
 * A server's uptime from its `INFO`, in ms, one second short. Redis reports uptime as the difference
 * of two wall-clock times each truncated to the second, so it can overstate the real uptime by
 * almost a second; the restart guard must never trust a server early.
 *
 * @example
 * uptimeMsOf('uptime_in_seconds:12\r\n'); // 11000
 */
export function uptimeMsOf(info: string): number {
  return Math.max(0, Number(infoField(info, 'uptime_in_seconds') ?? 0) - 1) * 1_000;
}
