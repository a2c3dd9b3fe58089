/**
 * /proc/meminfo parsed into a name → value record.
 *
 * Values carrying a "kB" unit are converted to bytes (×1024); unit-less
 * values (e.g. HugePages_Total) are kept as plain counts.
 */
export type Meminfo = Readonly<Record<string, number>>;

const LINE = /^([^:]+):\s*(\d+)(?:\s+([kK]B))?\s*$/;

/** Parse the text of /proc/meminfo. Lines that do not look like "Key: N [kB]" are ignored. */
export function parseMeminfo(text: string): Meminfo {
  const entries: Array<[string, number]> = [];
  for (const line of text.split('\n')) {
    const match = LINE.exec(line.trim());
    if (!match) continue;
    const key = match[1]!.trim();
    const value = Number(match[2]);
    entries.push([key, match[3] === undefined ? value : value * 1024]);
  }
  return Object.fromEntries(entries);
}
