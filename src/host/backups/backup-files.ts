import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';

/** Where backup tarballs live: `<state>/backups/<container id>/<backup id>.tar` (compression inside). */
export function backupFileOf(stateDir: string, containerId: string, backupId: string): string {
  return path.join(stateDir, 'backups', containerId, `${backupId}.tar`);
}

export async function ensureBackupDir(stateDir: string, containerId: string): Promise<string> {
  const dir = path.join(stateDir, 'backups', containerId);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  return dir;
}

export async function removeBackupFile(stateDir: string, containerId: string, backupId: string): Promise<void> {
  await rm(backupFileOf(stateDir, containerId, backupId), { force: true });
}

/** Where an uploaded backup waits until the reconciler has unpacked it. */
export function importFileOf(stateDir: string, containerId: string): string {
  return path.join(stateDir, 'backups', 'imports', `${containerId}.tar`);
}
