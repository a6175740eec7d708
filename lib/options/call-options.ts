import { checkOwner } from './owner.js';
import { RETRY_KEYS } from './resolve-retry.js';
import { isBoolean, refuse, refuseUnknown } from './validate.js';

/**
 * The per-call options of `acquire`, `tryAcquire`, `using`, `lead`, `@Locked` and `@LeaderOnly`
 * together (`ttl` reaches `using()` from `@Locked`); a key outside them is a typo or a module option.
 */
const CALL_OPTIONS: readonly string[] = [
  'signal',
  'autoExtend',
  'fencing',
  'ttl',
  ...RETRY_KEYS,
  'mode',
  'limit',
  'onBusy',
  'minHold',
  'maxHold',
  'owner',
];

/** Refuses malformed per-call options (`signal`, `autoExtend`, `fencing`, `owner`) before anything is sent. */
export function checkCallOptions(
  options: { signal?: unknown; autoExtend?: unknown; fencing?: unknown; owner?: unknown } | undefined,
): void {
  if (options === undefined) return;
  if (options === null || typeof options !== 'object') refuse('options', 'must be an object', options);
  for (const key of Object.keys(options))
    if (!CALL_OPTIONS.includes(key)) refuseUnknown(key, CALL_OPTIONS, 'a per-call option');
  if (options.signal !== undefined && !(options.signal instanceof AbortSignal))
    refuse('signal', 'must be an AbortSignal', options.signal);
  for (const key of ['autoExtend', 'fencing'] as const) {
    if (options[key] !== undefined) isBoolean(options[key], key);
  }
  if (options.owner !== undefined) checkOwner(options.owner);
}
