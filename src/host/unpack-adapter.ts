import { unpackBackup } from './backups/backup-tarball.ts';
import type { ImageFiles } from './images/inspect-image.ts';
import { unpackImage } from './images/unpack-image.ts';

/** The real unpacker the reconcilers are given (interface: src/reconcilers/adapters.ts): tar and unsquashfs. */
export function createUnpackAdapter() {
  return {
    unpackImage: (files: ImageFiles, target: string, signal?: AbortSignal) =>
      unpackImage({ files, target, ...(signal ? { signal } : {}) }),
    unpackBackup,
  };
}
