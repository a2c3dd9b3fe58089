import { execFile } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface HostMount {
  mountPoint: string;
  fsType: string;
  /** The mount source (`/dev/loop3` for a loop-backed btrfs pool). */
  source: string;
}

export interface HostLoop {
  device: string;
  /** As the kernel reports it, without a ` (deleted)` suffix. */
  backingFile: string;
  deleted: boolean;
}

const unescapeOctal = (s: string) => s.replace(/\\(\d{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
const under = (p: string, dir: string) => p === dir || p.startsWith(`${dir}/`);

/** Mounts at or under `dir`, deepest first, from /proc/self/mountinfo (the daemon shares our mount namespace). */
export async function mountsUnder(dir: string): Promise<HostMount[]> {
  const out: HostMount[] = [];
  for (const line of (await readFile('/proc/self/mountinfo', 'utf8')).split('\n')) {
    if (!line) continue;
    const [left = '', right = ''] = line.split(' - ');
    const mountPoint = unescapeOctal(left.split(' ')[4] ?? '');
    const [fsType = '', source = ''] = right.split(' ');
    if (under(mountPoint, dir)) out.push({ mountPoint, fsType, source: unescapeOctal(source) });
  }
  return out.sort((a, b) => b.mountPoint.length - a.mountPoint.length);
}

/** Attached loop devices whose backing file is under `dir` (from /sys/block/loop*\/loop/backing_file). */
export async function loopsUnder(dir: string): Promise<HostLoop[]> {
  const out: HostLoop[] = [];
  for (const name of await readdir('/sys/block').catch(() => [] as string[])) {
    if (!/^loop\d+$/.test(name)) continue;
    const text = await readFile(`/sys/block/${name}/loop/backing_file`, 'utf8').catch(() => undefined);
    if (text === undefined) continue;
    const line = text.replace(/\n$/, '');
    const deleted = line.endsWith(' (deleted)');
    const backingFile = deleted ? line.slice(0, -' (deleted)'.length) : line;
    if (under(backingFile, dir)) out.push({ device: `/dev/${name}`, backingFile, deleted });
  }
  return out.sort((a, b) => a.device.localeCompare(b.device, 'en', { numeric: true }));
}

/**
 * Fallback cleanup for a test's own state directory: unmount everything mounted under it (deepest
 * first; lazily if busy) and detach the loop devices backed by files under it. Nothing outside `dir`
 * is touched. Returns what it had to clean (empty when the API already removed everything).
 */
export async function cleanupStorageUnder(dir: string): Promise<string[]> {
  const cleaned: string[] = [];
  for (let round = 0; round < 5; round++) {
    const mounts = await mountsUnder(dir);
    if (mounts.length === 0) break;
    for (const m of mounts) {
      await run('umount', [m.mountPoint])
        .catch(() => run('umount', ['--lazy', m.mountPoint]))
        .catch(() => {});
      cleaned.push(`umount ${m.mountPoint}`);
    }
  }
  for (const l of await loopsUnder(dir)) {
    await run('losetup', ['-d', l.device]).catch(() => {});
    cleaned.push(`losetup -d ${l.device} (${l.backingFile})`);
  }
  return cleaned;
}
