import { runCommand } from '../exec.ts';
import type { IdMapEntry } from './migration-codec.ts';
import { inPackage } from '../../util/package-root.ts';

const shifter = () => process.env.SVCD_SHIFT ?? inPackage('.build/svcd-shift');

/**
 * svcd-shift's rules for a sender's on-disk map (host id -> container id, LXD's IDMapType): one per
 * uid or gid range whose ids differ. An empty list means the tree is already in container ids.
 */
export function shiftRules(map: readonly IdMapEntry[]): string[] {
  const rules: string[] = [];
  for (const m of map) {
    if (m.hostid === m.nsid || m.maprange <= 0) continue;
    if (m.isuid) rules.push(`u:${m.hostid}:${m.nsid}:${m.maprange}`);
    if (m.isgid) rules.push(`g:${m.hostid}:${m.nsid}:${m.maprange}`);
  }
  return rules;
}

/** Shift `dir` (a received volume) from the sender's map to container ids; returns how many entries changed. */
export async function shiftTree(dir: string, map: readonly IdMapEntry[], signal?: AbortSignal): Promise<number> {
  const rules = shiftRules(map);
  if (rules.length === 0) return 0;
  // metadata only, but a large tree has many entries: no short timeout
  const out = await runCommand(shifter(), [dir, ...rules], { timeoutMs: 60 * 60_000, ...(signal ? { signal } : {}) });
  return Number(out.trim()) || 0;
}
