import { SCRIPTS } from './scripts.generated.js';

type Call<R = number> = (numKeys: number, ...keysThenArgs: (string | number)[]) => Promise<R>;

/**
 * The mutex's scripts as commands of a connection (EVALSHA, with EVAL on NOSCRIPT). A cluster
 * node's `Master.scripts` implements every script's call slot by slot, merging the replies by the
 * script's rule in `SLOT_RULES` (lib/lua/slot-rules.ts).
 */
export interface MutexScripts {
  quorumLockAcquire: Call;
  quorumLockFencedAcquire: Call;
  quorumLockFence: Call;
  quorumLockExtend: Call;
  quorumLockRelease: Call;
  quorumLockRepair: Call;
}

/** The handoff queue's scripts (lib/kinds/mutex/ticket-*.lua, handoff-release.lua, plain-release.lua). */
export interface HandoffScripts {
  quorumLockTicketAcquire: Call<[granted: number, counterOrRank: number, masterTime: number, handed: number]>;
  quorumLockTicketUndo: Call;
  quorumLockTicketYield: Call;
  quorumLockTicketWithdraw: Call;
  quorumLockHandoffRelease: Call;
  quorumLockPlainRelease(key: string, value: string, reserveOrSilent: string): Promise<number>;
  /** Plain acquires and releases of one loop turn as one call (plain-batch.lua). */
  quorumLockPlainBatch: Call<unknown[]>;
}

/** The read-write lock's scripts (lib/kinds/read-write/*.lua). */
export interface ReadWriteScripts {
  quorumLockReadAcquire: Call;
  quorumLockReadExtend: Call;
  quorumLockReadRelease: Call;
  quorumLockWriterWaiting: Call;
  quorumLockWriterDone: Call;
}

/** An operator's revoke (lib/kinds/revoke.lua). */
export interface RevokeScripts {
  quorumLockRevoke: Call<[removed: number, released: number]>;
}

/** The counting lock's scripts (lib/kinds/counting/*.lua). */
export interface CountingScripts {
  quorumLockPermitAcquire: Call<unknown>;
  quorumLockPermitExtend: Call;
  quorumLockPermitRelease: Call;
}

/** What registering the scripts needs of a connection: ioredis `defineCommand` (the node-redis adapter has it too). */
export interface ScriptHost {
  defineCommand(name: string, definition: { lua: string; numberOfKeys?: number }): void;
}

/** A connection with every script of the library registered. */
export type LockScripts = MutexScripts & HandoffScripts & ReadWriteScripts & CountingScripts & RevokeScripts;

/**
 * Registers every script of the generated table on a connection with ioredis `defineCommand`
 * (once per connection: later calls return it as it is).
 *
 * @example
 * await defineScripts(client).quorumLockExtend(1, 'lock:orders', value, '10000'); // 1: extended
 */
export function defineScripts(client: ScriptHost): LockScripts {
  const scripted = client as unknown as Partial<LockScripts>;
  if (typeof scripted.quorumLockPlainRelease !== 'function') {
    for (const { command, lua, ...rest } of Object.values(SCRIPTS))
      client.defineCommand(command, 'numberOfKeys' in rest ? { lua, numberOfKeys: rest.numberOfKeys } : { lua });
  }
  return client as unknown as LockScripts;
}
