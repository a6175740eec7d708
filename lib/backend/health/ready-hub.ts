import type { MasterConnection } from '../master-connection.js';

/**
 * One `ready` listener per client, whatever the number of `Redlock` instances sharing it: a user's
 * ioredis client given to twelve instances must not collect twelve listeners.
 */
const hubs = new WeakMap<MasterConnection, Set<() => void>>();
const hubListeners = new WeakMap<MasterConnection, () => void>();

/** Calls `onReady` each time `client` becomes ready; returns what stops it (the last one removes the listener). */
export function watchReady(client: MasterConnection, onReady: () => void): () => void {
  let subscribers = hubs.get(client);
  if (!subscribers) {
    const set = new Set<() => void>();
    subscribers = set;
    const listener = (): void => {
      for (const s of [...set]) s();
    };
    hubs.set(client, set);
    hubListeners.set(client, listener);
    client.on('ready', listener);
  }
  subscribers.add(onReady);
  return () => {
    const set = hubs.get(client);
    if (!set) return;
    set.delete(onReady);
    if (set.size === 0) {
      client.off('ready', hubListeners.get(client)!);
      hubs.delete(client);
      hubListeners.delete(client);
    }
  };
}
