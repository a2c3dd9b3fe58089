import fs from 'node:fs';
import path from 'node:path';
import { HostInputError } from '../errors.ts';
import {
  fsError,
  makeDirectory,
  makeSymlink,
  readEntry,
  removeEntry,
  SMALL_FILE,
  writeFile,
  type WriteRequest,
} from '../container-files/file-ops.ts';
import {
  idmappedSources,
  openProcView,
  openRootfsView,
  parseLxcIdmap,
  type ContainerFs,
} from '../container-files/views.ts';
import { lxcPathOf } from '../layout.ts';
import { containerState } from '../lxc/lifecycle.ts';
import type { ContainerLocation } from './locate-container.ts';

/** Rendered LXC configs kept at most (one per container read). */
const MAX_CONFIGS = 1024;

/**
 * Files of a container, running (through its mount namespace) or stopped (its rootfs), with ownership
 * as the container sees it; every path is resolved inside the container's root (container-files/).
 */
export function createContainerFilesHost({ stateDir }: { stateDir: string }) {
  const lxcPath = lxcPathOf(stateDir);

  /** The rendered LXC config of a container, re-read only when the file changed (inode, size and mtime). */
  const configs = new Map<string, { stamp: string; text: string }>();
  const lxcConfigOf = (id: string): string => {
    const file = path.join(lxcPath, id, 'config');
    const st = fs.statSync(file, { throwIfNoEntry: false });
    if (!st) return '';
    const stamp = `${st.ino}:${st.size}:${st.mtimeMs}`;
    const hit = configs.get(id);
    if (hit?.stamp === stamp) return hit.text;
    const text = fs.readFileSync(file, 'utf8');
    if (configs.size >= MAX_CONFIGS) configs.delete(configs.keys().next().value!);
    configs.set(id, { stamp, text });
    return text;
  };

  /**
   * The running container's mount namespace when it has one, else its rootfs. Its LXC config (the
   * rendered one; a running container's mounts are checked again by device and inode where used)
   * names the ids an unprivileged container maps and the host directories it has idmapped.
   */
  const openFs = async ({ container: ct, rootfs }: ContainerLocation): Promise<ContainerFs> => {
    const lxcConfig = lxcConfigOf(ct.id);
    const live = await containerState({ name: ct.id, lxcPath });
    if (live.state !== 'STOPPED' && live.pid !== undefined && live.pid > 0) {
      const view = openProcView(live.pid, ct.id, idmappedSources(lxcConfig, rootfs));
      if (view) return view;
    }
    if (!rootfs) throw new HostInputError(`Container "${ct.name}" has no root filesystem yet`);
    try {
      return openRootfsView(rootfs, parseLxcIdmap(lxcConfig));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT')
        throw new HostInputError(`Container "${ct.name}" has no root filesystem yet`);
      throw e;
    }
  };

  const opsOn = (fsys: ContainerFs) => ({
    async read(p: string) {
      const entry = await readEntry(fsys, p);
      if (entry.type !== 'file' || entry.data) return entry;
      const { handle, ...rest } = entry;
      // The size when opened: a file growing meanwhile is served as it was (Content-Length holds).
      return { ...rest, stream: () => handle.createReadStream({ start: 0, end: entry.size - 1, autoClose: true }) };
    },
    makeDirectory: (p: string, req: WriteRequest) => makeDirectory(fsys, p, req),
    makeSymlink: (p: string, target: string, req: WriteRequest) => makeSymlink(fsys, p, target, req),
    write: (p: string, req: WriteRequest & { append: boolean }, body: AsyncIterable<Uint8Array> | Buffer) =>
      writeFile(fsys, p, req, body),
    remove: (p: string) => removeEntry(fsys, p),
  });

  return {
    smallFile: SMALL_FILE,
    async withFs<T>(
      where: ContainerLocation,
      p: string,
      f: (fsys: ReturnType<typeof opsOn>) => Promise<T>,
    ): Promise<T> {
      const fsys = await openFs(where);
      try {
        return await f(opsOn(fsys));
      } catch (e) {
        throw fsError(e, p);
      } finally {
        fsys.close();
      }
    },
  };
}
