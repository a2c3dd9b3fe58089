/**
 * A daemon's whole process tree over time, as bench/lib/process-tree.ts defines the tree (its descendants and
 * the processes naming a path of its state dir, not the containers), read from /proc with no process spawned:
 * its CPU time and its resident memory. CPU is utime+stime+cutime+cstime of every member, so a short-lived
 * child (an lxc-info, a forwarder launch) still counts once its parent has reaped it.
 */
import { readFile } from 'node:fs/promises';
import { listProcesses, readTreeMemory, selectTree, selfAndAncestors } from './process-tree.ts';

const TICKS_PER_SECOND = 100; // USER_HZ on Linux

/** The tree's members now. */
export async function treePids(root: number, ownedPath?: string): Promise<number[]> {
  const procs = await listProcesses();
  return selectTree(procs, root, { ...(ownedPath ? { ownedPath } : {}), skip: selfAndAncestors(procs) }).map(
    (p) => p.pid,
  );
}

/** CPU seconds used so far by the tree (its reaped children included). */
export async function treeCpuSeconds(root: number, ownedPath?: string): Promise<number> {
  let ticks = 0;
  for (const pid of await treePids(root, ownedPath)) {
    const text = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
    // utime stime cutime cstime are fields 14..17 of stat: 11..14 after the command name.
    const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
    if (text) ticks += Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]);
  }
  return ticks / TICKS_PER_SECOND;
}

/** The tree's CPU use over `windowMs` as % of one core. */
export async function treeCpuPercent(
  root: number,
  windowMs: number,
  ownedPath?: string,
): Promise<{ percent: number; seconds: number; members: number }> {
  const t0 = performance.now();
  const c0 = await treeCpuSeconds(root, ownedPath);
  await new Promise((r) => setTimeout(r, windowMs));
  const c1 = await treeCpuSeconds(root, ownedPath);
  const seconds = (performance.now() - t0) / 1000;
  return { percent: ((c1 - c0) / seconds) * 100, seconds, members: (await treePids(root, ownedPath)).length };
}

/** The tree's RSS once settled: the least of one sample a second over `ms` (node frees memory lazily, at its idle GC). */
export async function settledTreeRssKiB(root: number, ms: number, ownedPath?: string): Promise<number> {
  const rss = async () => (await readTreeMemory(root, ownedPath ? { ownedPath } : {}))?.rssKiB ?? 0;
  let least = await rss();
  for (const until = Date.now() + ms; Date.now() < until; ) {
    await new Promise((r) => setTimeout(r, 1_000));
    least = Math.min(least, await rss());
  }
  return least;
}
