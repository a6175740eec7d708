import { Redis, type RedisOptions } from 'ioredis';

/** One connected ioredis client per master URL (ioredis defaults unless `options` say otherwise). */
export async function openClients(urls: readonly string[], options: RedisOptions = {}): Promise<Redis[]> {
  const clients = urls.map((url) => new Redis(url, { ...options, lazyConnect: true }));
  await Promise.all(clients.map((c) => c.connect()));
  return clients;
}

export async function closeClients(clients: readonly Redis[]): Promise<void> {
  await Promise.all(clients.map((c) => c.quit().catch(() => c.disconnect())));
}
