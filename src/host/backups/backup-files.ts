import { mkdir, rm } from 'node:fs/promises';
import { backupDirOf, backupFileOf } from '../layout.ts';

export async function ensureBackupDir(stateDir: string, containerId: string): Promise<string> {
  const dir = backupDirOf(stateDir, containerId);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  return dir;
}

export async function removeBackupFile(stateDir: string, containerId: string, backupId: string): Promise<void> {
  await rm(backupFileOf(stateDir, containerId, backupId), { force: true });
}
