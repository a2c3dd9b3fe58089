/**
 * Loop devices: found by reading /sys/block/loop*\/loop/backing_file (no process spawned), attached and
 * detached with losetup.
 */
import { readdir, readFile, realpath } from 'node:fs/promises';
import path from 'node:path';
import { runCommand } from '../exec.ts';

export interface LoopDevice {
  /** `/dev/loopN` */
  device: string;
  /** Backing file as the kernel reports it (absolute, symlinks resolved). */
  backingFile: string;
  /** The backing file was unlinked while attached (the kernel appends ` (deleted)`). */
  deleted: boolean;
}

/** Parse the content of `/sys/block/loopN/loop/backing_file`. */
export function parseBackingFile(text: string): { path: string; deleted: boolean } {
  const line = text.replace(/\n$/, '');
  const deleted = line.endsWith(' (deleted)');
  return { path: deleted ? line.slice(0, -' (deleted)'.length) : line, deleted };
}

export const losetupArgs = {
  attach: (file: string) => ['--find', '--show', file],
  detach: (device: string) => ['--detach', device],
  refresh: (device: string) => ['--set-capacity', device],
};

/** Every attached loop device with its backing file. */
export async function listLoopDevices(opts: { sysRoot?: string } = {}): Promise<LoopDevice[]> {
  const blockDir = path.join(opts.sysRoot ?? '/sys', 'block');
  const names = (await readdir(blockDir).catch(() => [] as string[])).filter((n) => /^loop\d+$/.test(n));
  const out: LoopDevice[] = [];
  for (const name of names) {
    const text = await readFile(path.join(blockDir, name, 'loop', 'backing_file'), 'utf8').catch(() => undefined);
    if (text === undefined) continue; // not attached
    const { path: backingFile, deleted } = parseBackingFile(text);
    out.push({ device: `/dev/${name}`, backingFile, deleted });
  }
  return out.sort((a, b) => a.device.localeCompare(b.device, 'en', { numeric: true }));
}

/**
 * The loop device(s) backed by this file. A device whose file was unlinked (and maybe recreated since) only
 * matches with `includeDeleted` (used when cleaning up, never when reusing an attachment).
 */
export async function findLoopDevices(
  file: string,
  opts: { sysRoot?: string; includeDeleted?: boolean } = {},
): Promise<LoopDevice[]> {
  const wanted = new Set([path.resolve(file), await realpath(file).catch(() => path.resolve(file))]);
  return (await listLoopDevices(opts)).filter((d) => (opts.includeDeleted || !d.deleted) && wanted.has(d.backingFile));
}

/** The first loop device backed by this file, if any. */
export async function findLoopDevice(file: string, opts: { sysRoot?: string } = {}): Promise<string | undefined> {
  return (await findLoopDevices(file, opts))[0]?.device;
}

/** Attach a file to a free loop device; returns `/dev/loopN`. */
export async function attachLoop(file: string, signal?: AbortSignal): Promise<string> {
  const out = await runCommand('losetup', losetupArgs.attach(file), { signal, timeoutMs: 30_000 });
  const device = out.trim();
  if (!/^\/dev\/loop\d+$/.test(device)) throw new Error(`losetup attached ${file} but printed ${JSON.stringify(out)}`);
  return device;
}

/** Detach a loop device (if it is still in use, the kernel detaches it when the last user goes). */
export async function detachLoop(device: string, signal?: AbortSignal): Promise<void> {
  await runCommand('losetup', losetupArgs.detach(device), { signal, timeoutMs: 30_000 });
}

/** Make the loop device pick up a changed backing file size. */
export async function refreshLoop(device: string, signal?: AbortSignal): Promise<void> {
  await runCommand('losetup', losetupArgs.refresh(device), { signal, timeoutMs: 30_000 });
}
