/**
 * A daemon's whole process tree from /proc (no process spawned): its live descendants by parent pid,
 * their CPU time and their resident memory. CPU is utime+stime+cutime+cstime of every member, so a
 * short-lived child (an lxc-ls, a forwarder) still counts once its parent has reaped it.
 */
import { readdir, readFile } from 'node:fs/promises';

const TICKS_PER_SECOND = 100; // USER_HZ on Linux

/** Fields of /proc/<pid>/stat after the command name: [state, ppid, ...]. */
async function statFields(pid: number): Promise<string[] | undefined> {
  const text = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined);
  if (!text) return undefined;
  return text.slice(text.lastIndexOf(')') + 2).split(' ');
}

/** The pid and all its live descendants. */
export async function treePids(root: number): Promise<number[]> {
  const children = new Map<number, number[]>();
  for (const e of await readdir('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    const f = await statFields(Number(e));
    if (!f) continue;
    const ppid = Number(f[1]);
    children.set(ppid, [...(children.get(ppid) ?? []), Number(e)]);
  }
  const out: number[] = [];
  const todo = [root];
  while (todo.length) {
    const p = todo.pop()!;
    out.push(p);
    todo.push(...(children.get(p) ?? []));
  }
  return out;
}

/** CPU seconds used so far by the tree (its reaped children included). */
export async function treeCpuSeconds(root: number): Promise<number> {
  let ticks = 0;
  for (const pid of await treePids(root)) {
    const f = await statFields(pid);
    // utime stime cutime cstime are fields 14..17 of stat: 11..14 after the command name.
    if (f) ticks += Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]);
  }
  return ticks / TICKS_PER_SECOND;
}

/** Resident memory of the tree (sum of VmRSS), KiB. */
export async function treeRssKiB(root: number): Promise<number> {
  let kib = 0;
  for (const pid of await treePids(root)) {
    const text = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
    kib += Number(/^VmRSS:\s+(\d+)\s+kB/m.exec(text)?.[1] ?? 0);
  }
  return kib;
}

/** The tree's CPU use over `windowMs` as % of one core. */
export async function treeCpuPercent(root: number, windowMs: number): Promise<{ percent: number; seconds: number; members: number }> {
  const t0 = performance.now();
  const c0 = await treeCpuSeconds(root);
  await new Promise((r) => setTimeout(r, windowMs));
  const c1 = await treeCpuSeconds(root);
  const seconds = (performance.now() - t0) / 1000;
  return { percent: ((c1 - c0) / seconds) * 100, seconds, members: (await treePids(root)).length };
}

/** The tree's RSS once settled: the least of one sample a second over `ms` (node frees memory lazily, at its idle GC). */
export async function settledTreeRssKiB(root: number, ms: number): Promise<number> {
  let least = await treeRssKiB(root);
  for (const until = Date.now() + ms; Date.now() < until; ) {
    await new Promise((r) => setTimeout(r, 1_000));
    least = Math.min(least, await treeRssKiB(root));
  }
  return least;
}
