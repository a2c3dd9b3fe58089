/**
 * Finding a daemon and sampling figures about the machine, from /proc (no process spawned). A daemon's
 * memory is its whole tree's: bench/lib/process-tree.ts.
 */
import { readdir, readFile } from 'node:fs/promises';

/** The short command name of a process (`/proc/<pid>/comm`), undefined when it is gone. */
export async function processName(pid: number): Promise<string | undefined> {
  return (await readFile(`/proc/${pid}/comm`, 'utf8').catch(() => undefined))?.trim();
}

/**
 * Pids of processes whose comm is `name` and whose argv has no subcommand (for `lxd`: the daemon
 * itself, not `lxd forkstart` / `lxd forkexec` helpers).
 */
export async function findDaemonPids(name: string): Promise<number[]> {
  const out: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    if ((await processName(Number(entry))) !== name) continue;
    const argv = (await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '')).split('\0').filter(Boolean);
    if (argv.slice(1).some((a) => /^fork|^callhook$|^activateifneeded$/.test(a))) continue;
    out.push(Number(entry));
  }
  return out;
}

/** Sample a figure a few times over `settleMs` and return the last value (memory is released lazily). */
export async function settled<T>(read: () => Promise<T>, settleMs: number): Promise<T> {
  const until = Date.now() + settleMs;
  let last = await read();
  while (Date.now() < until) {
    await new Promise((r) => setTimeout(r, Math.min(1000, Math.max(0, until - Date.now()))));
    last = await read();
  }
  return last;
}

/** The 1, 5 and 15 minute load averages. */
export async function loadAverage(): Promise<[number, number, number]> {
  const parts = (await readFile('/proc/loadavg', 'utf8').catch(() => '')).split(' ').map(Number);
  return [parts[0] ?? NaN, parts[1] ?? NaN, parts[2] ?? NaN];
}
