import { randomUUID } from 'node:crypto';
import { createReadStream, createWriteStream, existsSync, readdirSync } from 'node:fs';
import { mkdir, readdir, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import type { ReadableStream } from 'node:stream/web';
import { pipeline } from 'node:stream/promises';
import { HostConflictError } from '../errors.ts';
import type {
  ContainerBackupRow,
  ContainerRow,
  ContainerSnapshotRow,
  StoragePoolRow,
} from '../../desired/schema/index.ts';
import { describeBackup } from '../backups/backup-config.ts';
import { ensureBackupDir, removeBackupFile } from '../backups/backup-files.ts';
import { packBackup } from '../backups/backup-tarball.ts';
import { scanBackup } from '../backups/scan-backup.ts';
import { detectFileCompression, extensionOf } from '../images/detect-compression.ts';
import { backupFileOf, importFileOf } from '../layout.ts';
import type { VolumePaths } from './volume-paths.ts';

type Expanded = { config: Record<string, string>; devices: Record<string, Record<string, string>> };

export interface BackupRequest {
  container: ContainerRow;
  pool: StoragePoolRow;
  backup: ContainerBackupRow;
  snapshots: ContainerSnapshotRow[];
  expand(x: Pick<ContainerRow, 'profiles' | 'config' | 'devices'>): Promise<Expanded>;
  signal: AbortSignal;
}

/** Container backups: tarballs of the root volume and its snapshots with LXD's layout, and tarballs uploaded for `lxc import`. */
export function createContainerBackupsHost({ stateDir, paths }: { stateDir: string; paths: VolumePaths }) {
  return {
    async pack({ container: ct, pool, backup, snapshots: snaps, expand, signal }: BackupRequest): Promise<void> {
      const volumePath = paths.volume(pool, ct.id);
      // The reconciler makes each snapshot on the pool before settling its create, so a snapshot
      // without its directory is not ready yet.
      const parts = snaps.map((s) => {
        const p = paths.snapshot(pool, ct.id, s.id);
        if (!existsSync(p))
          throw new HostConflictError(`snapshot "${s.name}" is not on the storage pool yet: try again once it is made`);
        return { name: s.name, path: p, present: readdirSync(p) };
      });
      const config = describeBackup({
        project: ct.project,
        container: { ...ct, expanded: await expand(ct) },
        snapshots: await Promise.all(snaps.map(async (s) => ({ ...s, expanded: await expand(s) }))),
        pool,
      });
      await ensureBackupDir(stateDir, ct.id);
      const final = backupFileOf(stateDir, ct.id, backup.id);
      const partial = `${final}.partial`;
      await packBackup({
        output: partial,
        volumePath,
        present: await readdir(volumePath),
        compression: backup.compression,
        index: {
          name: ct.name,
          backend: pool.driver,
          pool: pool.name,
          snapshots: snaps.map((s) => s.name),
          optimized: false,
          optimized_header: false,
          type: 'container',
          config,
        },
        config,
        snapshots: parts,
        signal,
      });
      await rename(partial, final);
    },

    async open(containerId: string, backupId: string) {
      const file = backupFileOf(stateDir, containerId, backupId);
      const st = await stat(file).catch(() => undefined);
      if (!st) return undefined;
      // The suffix LXD's tools use for what the file really holds (its magic bytes), for the download's name.
      const extension = extensionOf(await detectFileCompression(file));
      return { size: st.size, extension, stream: () => createReadStream(file), close: async () => {} };
    },

    remove: (containerId: string, backupId: string) => removeBackupFile(stateDir, containerId, backupId),

    /** The upload is stored beside the import files, every member checked (paths, links, kinds; index and config agree). */
    async receive(body: ReadableStream<Uint8Array>) {
      const dir = path.dirname(importFileOf(stateDir, 'x'));
      await mkdir(dir, { recursive: true, mode: 0o700 });
      const upload = path.join(dir, `.upload-${randomUUID()}`);
      const discard = () => rm(upload, { force: true });
      try {
        await pipeline(Readable.fromWeb(body), createWriteStream(upload, { mode: 0o600 }));
        const scanned = await scanBackup(upload);
        return {
          ...scanned,
          async place(id: string) {
            const file = importFileOf(stateDir, id);
            await rename(upload, file);
            return file;
          },
          discard,
        };
      } catch (e) {
        await discard();
        throw e;
      }
    },

    removeImport: (file: string) => rm(file, { force: true }),
  };
}
