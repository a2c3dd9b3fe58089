import { createHash, type Hash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';

/** A file being written while its bytes are fed to a hash (uploads, downloads). */
export interface HashedFile {
  path: string;
  write(chunk: Uint8Array): Promise<void>;
  /** Flush and close; resolves with the number of bytes written. */
  close(): Promise<number>;
}

export async function createHashedFile(path: string, hash: Hash): Promise<HashedFile> {
  const fh: FileHandle = await open(path, 'wx', 0o600);
  let size = 0;
  let closed = false;
  return {
    path,
    async write(chunk) {
      hash.update(chunk);
      size += chunk.byteLength;
      let off = 0;
      while (off < chunk.byteLength) off += (await fh.write(chunk, off, chunk.byteLength - off)).bytesWritten;
    },
    async close() {
      if (!closed) {
        closed = true;
        await fh.close();
      }
      return size;
    },
  };
}

/** SHA-256 of files read one after the other (a split image's fingerprint is over metadata then rootfs). */
export async function sha256Files(paths: string[], signal?: AbortSignal): Promise<string> {
  const hash = createHash('sha256');
  for (const p of paths)
    for await (const chunk of createReadStream(p, signal ? { signal } : {})) hash.update(chunk as Buffer);
  return hash.digest('hex');
}
