const TABLE = (() => {
  const table = new Uint16Array(256);
  for (let i = 0; i < 256; i++) {
    let crc = i << 8;
    for (let b = 0; b < 8; b++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
    table[i] = crc;
  }
  return table;
})();

/**
 * The Redis Cluster hash slot of a key (0–16383): CRC16/XMODEM of the key, or of its hash tag (the
 * text between the first `{` and the next `}` when not empty), modulo 16384, over the UTF-8 bytes.
 *
 * @example
 * clusterSlotOf('lock:{orders}:1') === clusterSlotOf('fence:{orders}:1'); // true: same hash tag
 */
export function clusterSlotOf(key: string): number {
  let bytes = Buffer.from(key, 'utf8');
  const open = bytes.indexOf(0x7b);
  if (open >= 0) {
    const close = bytes.indexOf(0x7d, open + 1);
    if (close > open + 1) bytes = bytes.subarray(open + 1, close);
  }
  let crc = 0;
  for (const byte of bytes) crc = ((crc << 8) & 0xffff) ^ TABLE[((crc >> 8) ^ byte) & 0xff];
  return crc & 16_383;
}

/**
 * Groups keys by hash slot, keeping each key's position, so that one script call per slot never
 * crosses slots (a cluster refuses a script whose keys are in different slots: CROSSSLOT).
 *
 * @example
 * bySlot(['lock:{a}:1', 'lock:b', 'lock:{a}:2']); // [[0, 2], [1]]
 */
export function bySlot(keys: readonly string[]): number[][] {
  const groups = new Map<number, number[]>();
  keys.forEach((key, i) => {
    const slot = clusterSlotOf(key);
    const group = groups.get(slot);
    if (group) group.push(i);
    else groups.set(slot, [i]);
  });
  return [...groups.values()];
}
