import {
  ownerField,
  push,
  replyAt,
  type KindReader,
  type MasterPermit,
  type PermitSlotInspection,
  type PermitsInspection,
} from '../inspection.js';
import { limitKeyOf, permitKeyOf } from './permit-keys.js';

/** The most slots `inspect()` reads per master (a limit record above it is reported, its slots beyond it are not). */
const MAX_SLOTS = 10_000;

/**
 * How `inspect()` reads a counting lock: per master, the limit record, then every permit slot up to
 * it in one MULTI/EXEC; across masters, each slot's most agreeing holder and how many slots a
 * quorum holds.
 *
 * @example
 * const part = await permitReader.readMaster(reads, 'lock:export:7', seen); // part.fields.permits
 */
export const permitReader: KindReader = {
  readMaster: async ({ master, exec }, key) => {
    const rawLimit = replyAt(await exec(master.client.multi().get(limitKeyOf(key, master))), 0, true) as string | null;
    const limit = rawLimit === null ? null : Number(rawLimit);
    const permits: MasterPermit[] = [];
    if (limit !== null && Number.isSafeInteger(limit) && limit >= 1) {
      const slots = Math.min(limit, MAX_SLOTS);
      let batch = master.client.multi();
      for (let i = 0; i < slots; i++) batch = batch.get(permitKeyOf(key, i, master)).pttl(permitKeyOf(key, i, master));
      const replies = await exec(batch);
      for (let i = 0; i < slots; i++) {
        const holder = replyAt(replies, 2 * i, true) as string | null;
        const left = replyAt(replies, 2 * i + 1) as number;
        const taken = holder !== null && left > 0;
        permits.push({
          slot: i,
          holder: taken ? holder : null,
          ...(taken ? ownerField(holder) : {}),
          pttl: taken ? left : null,
        });
      }
    }
    const fields = { limit: limit !== null && Number.isFinite(limit) ? limit : null, permits };
    const longest = [...permits].sort((a, b) => (b.pttl ?? 0) - (a.pttl ?? 0))[0];
    return longest ? { fields, owner: { owner: longest.owner ?? null, pttl: longest.pttl ?? 0 } } : { fields };
  },
  summarize: (holdings, tally) => {
    const slots = new Map<number, Map<string, number[]>>();
    const limits = new Set<number>();
    for (const h of holdings) {
      if (typeof h.limit === 'number') limits.add(h.limit);
      for (const p of h.permits ?? []) {
        if (p.holder === null || p.pttl === null) continue;
        const holders = slots.get(p.slot) ?? new Map<string, number[]>();
        push(holders, p.holder, p.pttl);
        slots.set(p.slot, holders);
      }
    }
    if (limits.size === 0 && slots.size === 0) return { fields: {} };
    const views = [...slots]
      .sort(([a], [b]) => a - b)
      .map(([slot, holders]): PermitSlotInspection => ({ slot, ...tally.summarize(holders)[0] }));
    const recorded = [...limits].sort((a, b) => a - b);
    const permits: PermitsInspection = {
      limit: recorded.at(-1) ?? views.length,
      ...(recorded.length > 1 ? { limits: recorded } : {}),
      held: views.filter((s) => s.held).length,
      slots: views,
    };
    const most = [...views].sort((a, b) => b.agreeing - a.agreeing)[0];
    return most ? { fields: { permits }, owner: { owner: most.owner ?? null } } : { fields: { permits } };
  },
};
