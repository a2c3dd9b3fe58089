import { execFileSync } from 'node:child_process';
import { type Dirent, readdirSync } from 'node:fs';
import path from 'node:path';

/**
 * The subvolumes two levels below `dir` (`<pool>/containers-snapshots/<volume>/<snapshot>`) with their
 * received uuid from `btrfs subvolume show` ('-' when not received): only `btrfs receive` sets one.
 */
export function receivedUuids(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (d: string, depth: number) => {
    let entries: Dirent[] = [];
    try {
      entries = readdirSync(d, { withFileTypes: true });
    } catch {}
    for (const e of entries) {
      if (!e.isDirectory()) continue;
      const p = path.join(d, e.name);
      if (depth === 0) {
        const show = execFileSync('btrfs', ['subvolume', 'show', p], { encoding: 'utf8' });
        out.set(p, /Received UUID:\s+(\S+)/.exec(show)?.[1] ?? '-');
      } else walk(p, depth - 1);
    }
  };
  walk(dir, 1);
  return out;
}
