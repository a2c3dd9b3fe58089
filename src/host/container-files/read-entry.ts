import fs from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { ownerOf, type Owner } from './entry-owner.ts';
import { notFound, unsupported } from './file-errors.ts';
import { fdPath, openFinal } from './resolve-in-root.ts';
import type { ContainerFs } from './views.ts';
import { withResolvedAsync } from './with-resolved.ts';

/**
 * Files up to this size are read and written with synchronous calls in one go (their data is in the page
 * cache either way): a small file costs one event-loop turn instead of a thread-pool round trip per step.
 */
export const SMALL_FILE = 64 * 1024;

export type Entry =
  /** A small file's whole content (`data`), or an open handle on a larger one (the caller closes it). */
  | (Owner & { type: 'file'; size: number; data: Buffer; handle?: undefined })
  | (Owner & { type: 'file'; size: number; handle: FileHandle; data?: undefined })
  | (Owner & { type: 'directory'; entries: string[] })
  | (Owner & { type: 'symlink'; target: string });

/** GET: a file (an open handle; the caller closes it), a directory's entry names, or a symlink's target. */
export async function readEntry(fsys: ContainerFs, path: string): Promise<Entry> {
  return withResolvedAsync(fsys, path, async (r) => {
    const fin = openFinal(r, path, fsys.main.guard);
    if (!fin) throw notFound(path);
    try {
      const owner = ownerOf(fsys.main, fin.st);
      if (fin.st.isFile()) {
        // Reopening the O_PATH fd opens the very inode that was checked.
        if (fin.st.size <= SMALL_FILE) return { ...owner, type: 'file', ...readSmall(fin.fd, fin.st.size) };
        const handle = await open(fdPath(fin.fd), fs.constants.O_RDONLY);
        return { ...owner, type: 'file', size: fin.st.size, handle };
      }
      if (fin.st.isDirectory()) return { ...owner, type: 'directory', entries: fs.readdirSync(fdPath(fin.fd)).sort() };
      if (fin.st.isSymbolicLink())
        return { ...owner, type: 'symlink', target: fs.readlinkSync(fdPath(r.dir, r.name!)) };
      throw unsupported(path);
    } finally {
      fs.closeSync(fin.fd);
    }
  });
}

/** The content of the small file behind the O_PATH fd `pathFd`, checked at `size` bytes. */
function readSmall(pathFd: number, size: number): { size: number; data: Buffer } {
  const fd = fs.openSync(fdPath(pathFd), fs.constants.O_RDONLY);
  try {
    const data = Buffer.allocUnsafe(size);
    let n = 0;
    while (n < data.length) {
      const got = fs.readSync(fd, data, n, data.length - n, n);
      if (got === 0) break;
      n += got;
    }
    // The size when checked: a file shrinking meanwhile is served as far as it goes.
    return { size: n, data: n === data.length ? data : data.subarray(0, n) };
  } finally {
    fs.closeSync(fd);
  }
}
