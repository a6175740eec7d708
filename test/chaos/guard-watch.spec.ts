import { readGuardWatch } from '../../chaos/report.js';

describe("the chaos report's reading of the restart guard's watcher", () => {
  it('does not count a restart the watcher never saw distrusted as a trust before the window', () => {
    const read = readGuardWatch([{ ms: 1_020 }, { ms: null }, { ms: 1_500 }], 1_012);
    expect(read.tooSoon).toEqual([]);
    expect(read.unseen).toBe(1);
    expect(read.observed).toEqual([1_020, 1_500]);
  });

  it('counts a master seen trusted again before the window as too soon', () => {
    const read = readGuardWatch([{ ms: 40 }, { ms: null }, { ms: 2_000 }], 1_012);
    expect(read.tooSoon).toEqual([40]);
    expect(read.unseen).toBe(1);
  });
});
