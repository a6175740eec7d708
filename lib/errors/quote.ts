/** How many resources an error message lists before it says "and N more". */
const QUOTED_RESOURCES = 5;
/** How many characters of one resource name an error message shows. */
const QUOTED_NAME_LENGTH = 80;

/**
 * Resource names for an error message, JSON-quoted, at most `max` of them and each cut to a
 * readable length, so that a lock on 100,000 resources does not make a megabyte-long message.
 *
 * @example
 * quote(['a', 'b']); // '"a", "b"'
 * quote(Array.from({ length: 9 }, (_, i) => `r${i}`)); // '"r0", "r1", "r2", "r3", "r4" and 4 more'
 */
export function quote(resources: readonly string[], max = QUOTED_RESOURCES): string {
  const shown = resources
    .slice(0, max)
    .map((r) => JSON.stringify(r.length > QUOTED_NAME_LENGTH ? `${r.slice(0, QUOTED_NAME_LENGTH)}…` : r));
  const more = resources.length - shown.length;
  return more > 0 ? `${shown.join(', ')} and ${more} more` : shown.join(', ');
}
