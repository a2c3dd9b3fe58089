/**
 * Parse a kernel CPU list such as the content of
 * /sys/devices/system/cpu/online: comma-separated ids and inclusive ranges,
 * e.g. "0-3,6\n" → [0, 1, 2, 3, 6].
 *
 * The result is sorted ascending and free of duplicates. Whitespace-only input
 * yields an empty list. Malformed input throws a RangeError rather than being
 * silently misread.
 */
export function parseCpuList(text: string): number[] {
  const trimmed = text.trim();
  if (trimmed === '') return [];

  const ids = new Set<number>();
  for (const rawPart of trimmed.split(',')) {
    const part = rawPart.trim();
    const match = /^(\d+)(?:-(\d+))?$/.exec(part);
    if (!match) {
      throw new RangeError(`invalid CPU list entry ${JSON.stringify(part)} in ${JSON.stringify(trimmed)}`);
    }
    const first = Number(match[1]);
    const last = match[2] === undefined ? first : Number(match[2]);
    if (last < first) {
      throw new RangeError(`invalid CPU range ${JSON.stringify(part)} (end before start)`);
    }
    for (let id = first; id <= last; id++) ids.add(id);
  }
  return [...ids].sort((a, b) => a - b);
}
