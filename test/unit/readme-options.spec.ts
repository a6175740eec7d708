import { readFileSync } from 'node:fs';
import { describe, expect, it } from '@jest/globals';
import { REDLOCK_OPTIONS } from '../../lib/options/redlock-options.js';

/** The README's "## Options" table as [option, default, meaning] rows. */
function readmeOptionRows(): Map<string, { shown: string; doc: string }> {
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
  const section = readme.slice(readme.indexOf('\n## Options\n'));
  const table = section.slice(0, section.indexOf('\n\n', section.indexOf('| option |')));
  const rows = new Map<string, { shown: string; doc: string }>();
  for (const line of table.split('\n')) {
    const match = /^\| `(\w+)` \| (.*?) \| (.*) \|$/.exec(line);
    if (match) rows.set(match[1], { shown: match[2], doc: match[3] });
  }
  return rows;
}

/** Options of `RedlockModule.forRoot()` that are not `Redlock` options. */
const MODULE_ONLY = ['isGlobal'];

describe('the README option table', () => {
  const rows = readmeOptionRows();

  it('lists every option of REDLOCK_OPTIONS, and nothing else but module-only options', () => {
    expect([...rows.keys()].filter((name) => !MODULE_ONLY.includes(name))).toEqual(Object.keys(REDLOCK_OPTIONS));
  });

  it.each(Object.entries(REDLOCK_OPTIONS))(
    'shows `%s` with the default and meaning declared in REDLOCK_OPTIONS',
    (name, spec) => {
      expect(rows.get(name)).toEqual({ shown: spec.shown, doc: spec.doc });
    },
  );
});
