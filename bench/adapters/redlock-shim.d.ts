/**
 * `redlock@5.0.0-beta.2` ships its types at dist/index.d.ts but its `exports` map has no `types`
 * condition, so TypeScript's nodenext resolution cannot see them (node-redlock#290/#307). This
 * declares the part the benchmark uses.
 */
declare module 'redlock' {
  import type { EventEmitter } from 'node:events';
  import type { Redis } from 'ioredis';

  export interface Settings {
    readonly driftFactor: number;
    readonly retryCount: number;
    readonly retryDelay: number;
    readonly retryJitter: number;
    readonly automaticExtensionThreshold: number;
  }
  export class ResourceLockedError extends Error {}
  export class ExecutionError extends Error {}
  export class Lock {
    readonly resources: string[];
    readonly value: string;
    expiration: number;
    release(): Promise<unknown>;
  }
  export default class Redlock extends EventEmitter {
    constructor(clients: Iterable<Redis>, settings?: Partial<Settings>);
    acquire(resources: string[], duration: number, settings?: Partial<Settings>): Promise<Lock>;
    release(lock: Lock, settings?: Partial<Settings>): Promise<unknown>;
  }
}
