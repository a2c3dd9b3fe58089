import type { Db } from '../db/types.ts';
import { deleteBackupRow, expiredBackups } from '../desired/container-backups.ts';
import type { ExpiryFilesAdapter } from './adapters.ts';
import type { PollObserver } from './types.ts';

/** Backups whose expiry passed are deleted (spec: a backup with an expiry is deleted automatically). */
export function createBackupExpiryObserver(deps: {
  db: Db;
  stateDir: string;
  files: Pick<ExpiryFilesAdapter, 'removeBackupFile'>;
  /** This member: only the backups of the containers it holds are on its host. */
  node?: string;
  now?: () => Date;
  intervalMs?: number;
}): PollObserver {
  return {
    name: 'backup-expiry',
    kind: 'poll',
    intervalMs: deps.intervalMs ?? 30_000,
    async sample() {
      for (const b of await expiredBackups(deps.db, deps.now?.() ?? new Date(), deps.node)) {
        await deps.files.removeBackupFile(deps.stateDir, b.containerId, b.id);
        await deleteBackupRow(deps.db, b.id);
      }
    },
  };
}
