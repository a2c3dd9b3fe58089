import type { ExpiryFilesAdapter } from '../observers/adapters.ts';
import { removeBackupFile } from './backups/backup-files.ts';
import { removeOldExecOutput } from './exec-output-files.ts';

/** The real files the expiry observers remove. */
export function createExpiryFilesAdapter(): ExpiryFilesAdapter {
  return { removeOldExecOutput, removeBackupFile };
}
