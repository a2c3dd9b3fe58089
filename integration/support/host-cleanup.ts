import { execFile } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Mount points at or under `dir`, deepest first (from /proc/self/mountinfo). */
export async function mountsUnder(dir: string): Promise<string[]> {
  const text = await readFile('/proc/self/mountinfo', 'utf8');
  const points = text
    .split('\n')
    .filter(Boolean)
    .map((l) => l.split(' ')[4]!.replace(/\\(\d{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8))));
  return points.filter((p) => p === dir || p.startsWith(`${dir}/`)).sort((a, b) => b.length - a.length);
}

/** Loop devices whose backing file is under `dir` (from /sys, no process spawned). */
export async function loopsUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const dev of await readdir('/sys/block').catch(() => [] as string[])) {
    if (!dev.startsWith('loop')) continue;
    const backing = await readFile(`/sys/block/${dev}/loop/backing_file`, 'utf8').catch(() => '');
    if (backing.trim().startsWith(`${dir}/`)) out.push(`/dev/${dev}`);
  }
  return out;
}

/** Unmount and detach whatever a test left under its own state directory (and only there). */
export async function cleanupHostUnder(dir: string): Promise<void> {
  for (const m of await mountsUnder(dir)) await run('umount', ['-l', m]).catch(() => {});
  for (const l of await loopsUnder(dir)) await run('losetup', ['-d', l]).catch(() => {});
}
