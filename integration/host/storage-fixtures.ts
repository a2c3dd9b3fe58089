/**
 * Helpers for the storage tests against the real host: a private temp root under /tmp, and a cleanup that
 * unmounts, detaches and deletes only what lives under that root (whatever state a failed test left).
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, open, readFile, rm, stat } from 'node:fs/promises';
import { runCommand } from '../../src/host/exec.ts';
import { createHostChecker } from '../../src/host/storage/host-checker.ts';
import { detachLoop, listLoopDevices } from '../../src/host/storage/loop.ts';
import { unmount } from '../../src/host/storage/mount.ts';
import { readMounts } from '../../src/host/storage/mountinfo.ts';

/** Why the real-host storage tests cannot run here, or undefined when they can. */
export async function hostSkipReason(): Promise<string | undefined> {
  if (process.getuid?.() !== 0) return 'storage host tests need root (mount, losetup)';
  const checker = createHostChecker();
  for (const tool of ['mkfs.btrfs', 'btrfs', 'losetup', 'rsync'])
    if (!(await checker.hasTool(tool))) return `${tool} is not installed`;
  return undefined;
}

export async function makeTestRoot(): Promise<string> {
  return mkdtemp('/tmp/svcd-storage-it-');
}

function inside(root: string, p: string): boolean {
  return p.startsWith(`${root}/`);
}

/** Unmount everything mounted under root (deepest first), detach loop devices backed by files under root, delete root. */
export async function cleanupTestRoot(root: string): Promise<void> {
  if (!root.startsWith('/tmp/svcd-storage-it-')) throw new Error(`refusing to clean ${root}`);
  for (let round = 0; round < 10; round++) {
    const mounted = (await readMounts())
      .filter((m) => inside(root, m.mountPoint))
      .sort((a, b) => b.mountPoint.length - a.mountPoint.length);
    if (mounted.length === 0) break;
    for (const m of mounted)
      await unmount(m.mountPoint).catch(() => runCommand('umount', ['--lazy', m.mountPoint]).catch(() => undefined));
  }
  for (const d of await listLoopDevices())
    if (inside(root, d.backingFile)) await detachLoop(d.device).catch(() => undefined);
  await rm(root, { recursive: true, force: true });
}

/** Loop devices (also those whose file was deleted) backed by this file. */
export async function loopsFor(file: string): Promise<string[]> {
  return (await listLoopDevices()).filter((d) => d.backingFile === file).map((d) => d.device);
}

/** How many mounts sit exactly at this path. */
export async function mountCount(p: string): Promise<number> {
  return (await readMounts()).filter((m) => m.mountPoint === p).length;
}

/** Everything mounted at or below this path. */
export async function mountsUnder(p: string): Promise<string[]> {
  return (await readMounts()).filter((m) => m.mountPoint === p || inside(p, m.mountPoint)).map((m) => m.mountPoint);
}

/** Write `mib` MiB of random-ish data and fsync; rejects with the errno error (EDQUOT, ENOSPC...) on failure. */
export async function writeMiB(file: string, mib: number): Promise<void> {
  const chunk = randomBytes(1024 * 1024);
  const fh = await open(file, 'w');
  try {
    for (let i = 0; i < mib; i++) await fh.write(chunk);
    await fh.sync();
  } finally {
    await fh.close().catch(() => undefined);
  }
}

/** `df -B1` total and used bytes of the filesystem holding p. */
export async function df(p: string): Promise<{ total: number; used: number }> {
  const out = await runCommand('df', ['-B1', '--output=size,used', p]);
  const [total, used] = (out.trim().split('\n')[1] ?? '').trim().split(/\s+/).map(Number);
  if (total === undefined || used === undefined) throw new Error(`cannot parse df output: ${out}`);
  return { total, used };
}

export async function exists(p: string): Promise<boolean> {
  return stat(p).then(
    () => true,
    () => false,
  );
}

export async function text(p: string): Promise<string> {
  return readFile(p, 'utf8');
}

export function errnoCode(e: unknown): string | undefined {
  return (e as NodeJS.ErrnoException | null)?.code;
}
