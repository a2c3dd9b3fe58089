/**
 * At most `perTick` items of a changing collection per call, taking up where the last call stopped, so
 * that a periodic check of N things costs O(perTick) a tick and still reaches each of them every
 * ceil(N / perTick) ticks. With N ≤ perTick every item is in every slice.
 */
export function createRoundRobin(perTick: number): <T>(items: readonly T[]) => T[] {
  if (!(perTick >= 1)) throw new RangeError(`perTick must be >= 1, got ${perTick}`);
  let cursor = 0;
  return <T>(items: readonly T[]): T[] => {
    if (items.length <= perTick) {
      cursor = 0;
      return [...items];
    }
    if (cursor >= items.length) cursor = 0;
    const slice = items.slice(cursor, cursor + perTick);
    if (slice.length < perTick) slice.push(...items.slice(0, perTick - slice.length));
    cursor = (cursor + perTick) % items.length;
    return slice;
  };
}
