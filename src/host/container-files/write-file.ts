/**
 * Uploads go to a temporary file in the target directory, renamed over the target once the body
 * is complete, so a failed upload leaves the old file as it was; appends go in place and are cut
 * back to the old size on failure.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { creationDir, unlinkQuietly } from './creation-dir.ts';
import { applyOwner, existingOwner, ownerFor, ownerGiven, type Owner, type WriteRequest } from './entry-owner.ts';
import { createError, notFound, renameError, unsupported } from './file-errors.ts';
import { fdPath, openFinal, type Resolved } from './resolve-in-root.ts';
import type { ContainerFs } from './views.ts';
import { finalName, withResolvedAsync } from './with-resolved.ts';

const { O_CREAT, O_EXCL, O_NOFOLLOW, O_WRONLY, O_APPEND } = fs.constants;

function writeAllSync(fd: number, chunk: Uint8Array): void {
  for (let off = 0; off < chunk.byteLength; ) off += fs.writeSync(fd, chunk, off, chunk.byteLength - off);
}

/** FileHandle.write may write less than asked (disk nearly full): go on until all is written. */
async function writeAll(fh: FileHandle, chunk: Uint8Array): Promise<void> {
  for (let off = 0; off < chunk.byteLength; ) off += (await fh.write(chunk, off, chunk.byteLength - off)).bytesWritten;
}

/**
 * POST a file: `body` is the whole content of a small file (written at once), or a stream written as it
 * comes. Overwrite (default) replaces the file (keeping its owner and mode unless given); append adds
 * to it. A new file gets uid/gid 0 and mode 0644 unless given.
 */
export async function writeFile(
  fsys: ContainerFs,
  path: string,
  req: WriteRequest & { append: boolean },
  body: AsyncIterable<Uint8Array> | Buffer,
): Promise<void> {
  await withResolvedAsync(fsys, path, async (r) => {
    const name = finalName(path, r);
    const old = existingOwner(fsys, r, path, 'file');
    const owner = ownerFor(req, old, 0o644);
    if (req.append && old) return appendTo(fsys, r, path, owner, req, body);
    const where = creationDir(fsys, r);
    const temp = `.svcd-upload.${randomBytes(8).toString('hex')}`;
    let fh: FileHandle | undefined;
    let placed = false;
    try {
      const flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW;
      if (Buffer.isBuffer(body)) {
        let fd: number;
        try {
          fd = fs.openSync(fdPath(where.dir, temp), flags, 0o600);
        } catch (e) {
          throw createError(e, path);
        }
        try {
          writeAllSync(fd, body);
          applyOwner(where.view, fd, owner);
        } finally {
          fs.closeSync(fd);
        }
      } else {
        const out = await open(fdPath(where.dir, temp), flags, 0o600).catch((e: unknown) =>
          Promise.reject(createError(e, path)),
        );
        fh = out;
        for await (const chunk of body) await writeAll(out, chunk);
        applyOwner(where.view, out.fd, owner);
        fh = undefined;
        await out.close();
      }
      // rename replaces whatever is at `name` now (never following it), inside the same directory.
      try {
        fs.renameSync(fdPath(where.dir, temp), fdPath(where.dir, name));
      } catch (e) {
        throw renameError(e, path);
      }
      placed = true;
    } finally {
      await fh?.close().catch(() => {});
      if (!placed) unlinkQuietly(fdPath(where.dir, temp));
      where.close();
    }
  });
}

async function appendTo(
  fsys: ContainerFs,
  r: Resolved,
  path: string,
  owner: Owner,
  req: WriteRequest,
  body: AsyncIterable<Uint8Array> | Buffer,
): Promise<void> {
  const fin = openFinal(r, path, fsys.main.guard);
  if (!fin) throw notFound(path);
  let fh: FileHandle | undefined;
  try {
    if (!fin.st.isFile()) throw unsupported(path);
    fh = await open(fdPath(fin.fd), O_WRONLY | O_APPEND);
    const size = (await fh.stat()).size;
    try {
      for await (const chunk of Buffer.isBuffer(body) ? [body] : body) await writeAll(fh, chunk);
    } catch (e) {
      await fh.truncate(size).catch(() => {});
      throw e;
    }
    if (ownerGiven(req)) applyOwner(fsys.main, fh.fd, owner);
  } finally {
    await fh?.close().catch(() => {});
    fs.closeSync(fin.fd);
  }
}
