// How the CLI prints: aligned columns, short values, durations.

export function table(rows: string[][]): string {
  const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => r[c].length)));
  return (
    rows
      .map((r) =>
        r
          .map((cell, c) => (c === r.length - 1 ? cell : cell.padEnd(widths[c])))
          .join('  ')
          .trimEnd(),
      )
      .join('\n') + '\n'
  );
}

export const short = (value: string | null): string =>
  value === null ? '-' : value.length > 8 ? `${value.slice(0, 8)}…` : value;

/** The OWNER column: the holder's `owner` option, cut to 32 characters (`--json` has it whole); '-' when none. */
export const ownerCell = (owner: string | null | undefined): string =>
  owner === null || owner === undefined || owner === '' ? '-' : owner.length > 32 ? `${owner.slice(0, 32)}…` : owner;

export function formatMs(ms: number): string {
  if (ms < 1_000) return `${Math.round(ms)} ms`;
  if (ms < 120_000) return `${(ms / 1_000).toFixed(1)} s`;
  if (ms < 7_200_000) return `${Math.round(ms / 60_000)} min`;
  if (ms < 172_800_000) return `${Math.round(ms / 3_600_000)} h`;
  return `${Math.round(ms / 86_400_000)} d`;
}

export interface Output {
  write(text: string): unknown;
}
