import type { Hash } from 'node:crypto';
import { InvalidImageError } from '../images/errors.ts';
import { createHashedFile } from '../images/hashed-file.ts';
import { inspectImage, type ImageFiles } from '../images/inspect-image.ts';
import type { ImageStore } from '../images/create-image-store.ts';
import { openImageFiles } from './open-image-files.ts';
import type { RemoteImages } from '../images/remote/download-remote-image.ts';

/** The image store as the API uses it (src/api/host-service.ts ImageHost), created once per agent. */
export function createImageHost({ store, remote }: { store: ImageStore; remote: RemoteImages }) {
  return {
    remote,
    init: store.init,
    tempFiles: store.tempFiles,
    createHashedFile: (path: string, hash: Hash) => createHashedFile(path, hash),
    inspect: (files: ImageFiles, signal?: AbortSignal) => inspectImage(files, signal),
    invalid: (message: string) => new InvalidImageError(message),
    withLock: store.withLock,
    commit: store.commit,
    discard: store.discard,
    removeFiles: store.removeFiles,
    open: (img: { fingerprint: string; split: boolean }) =>
      openImageFiles(img.fingerprint, store.files(img.fingerprint, img.split)),
    sweep: store.sweep,
  };
}
