/** Pool usage from statfs(2): no process spawned. */
import { statfs } from 'node:fs/promises';
import type { PoolUsage } from './types.ts';

export interface StatfsNumbers {
  bsize: number;
  blocks: number;
  bfree: number;
  files: number;
  ffree: number;
}

/** Space in bytes (used = blocks - bfree, like df), inodes from files/ffree (0/0 where the fs has no fixed count, e.g. btrfs). */
export function usageFromStatfs(s: StatfsNumbers): PoolUsage {
  return {
    space: { used: (s.blocks - s.bfree) * s.bsize, total: s.blocks * s.bsize },
    inodes: { used: Math.max(0, s.files - s.ffree), total: s.files },
  };
}

/** Usage of the filesystem holding `path`. */
export async function statfsUsage(p: string): Promise<PoolUsage> {
  const s = await statfs(p);
  return usageFromStatfs({ bsize: s.bsize, blocks: s.blocks, bfree: s.bfree, files: s.files, ffree: s.ffree });
}
