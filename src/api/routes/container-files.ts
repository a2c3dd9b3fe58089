import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { and, eq, isNull } from 'drizzle-orm';
import type { Context, Hono } from 'hono';
import { NotFoundError, ValidationError } from '../../desired/errors.ts';
import { validateContainerName } from '../../desired/names.ts';
import { readDataVersion } from '../../desired/data-versions.ts';
import { containers, storagePools, storageVolumes, type ContainerRow, type StoragePoolRow } from '../../desired/schema/index.ts';
import { containerState } from '../../host/lxc/lifecycle.ts';
import { fsError, makeDirectory, makeSymlink, readEntry, removeEntry, SMALL_FILE, writeFile, type Owner, type WriteRequest } from '../../host/container-files/file-ops.ts';
import { idmappedSources, openProcView, openRootfsView, parseLxcIdmap, type ContainerFs } from '../../host/container-files/views.ts';
import { readBodyLimited } from '../body.ts';
import { createVersionedCache } from '../memo.ts';
import type { AppEnv } from '../context.ts';
import type { ApiDeps } from '../deps.ts';
import { sync } from '../envelope.ts';
import { param, route } from '../router.ts';
import { lxcPathOf, poolSpecOf } from '../../host/layout.ts';

/** A container with its root volume's pool (see targets). */
type Target = ContainerRow & { pool: StoragePoolRow | null };

/** A symlink's target travels as the body: no more than a path. */
const MAX_SYMLINK_BODY = 4096;

/** A request header under its `X-SVC-` or `X-LXD-` name (hono matches names case-insensitively). */
function fileHeader(c: Context<AppEnv>, name: string): string | undefined {
  const v = c.req.header(`x-svc-${name}`) ?? c.req.header(`x-lxd-${name}`);
  return v === undefined || v.trim() === '' ? undefined : v.trim();
}

/** An id header: a decimal id; -1 (what LXD clients send for "not given") counts as absent. */
function idHeader(c: Context<AppEnv>, name: 'uid' | 'gid'): number | undefined {
  const v = fileHeader(c, name);
  if (v === undefined || v === '-1') return undefined;
  if (!/^\d{1,10}$/.test(v) || Number(v) > 4294967294) throw new ValidationError(`Invalid X-SVC-${name} header "${v}": expected an id from 0 to 4294967294 (or -1 for unset)`);
  return Number(v);
}

/**
 * The mode header, read as LXD does (Go's base-0 integer syntax: `0644` and `0o644` are octal, `0x`
 * hex, plain digits decimal); the `lxc` CLI sends `%04o`, pylxd a leading 0. -1 counts as absent.
 */
export function parseModeHeader(v: string | undefined): number | undefined {
  if (v === undefined || v === '-1') return undefined;
  const m = /^(?:0[oO]?([0-7]+)|0[xX]([0-9a-fA-F]+)|0[bB]([01]+)|([1-9]\d*)|(0))$/.exec(v.replace(/_/g, ''));
  const n = !m ? NaN : m[1] !== undefined ? parseInt(m[1], 8) : m[2] !== undefined ? parseInt(m[2], 16) : m[3] !== undefined ? parseInt(m[3], 2) : Number(m[4] ?? 0);
  if (!Number.isSafeInteger(n) || n > 0o7777) throw new ValidationError(`Invalid X-SVC-mode header "${v}": expected permission bits such as 0644 (at most 07777)`);
  return n;
}

function oneOf<T extends string>(c: Context<AppEnv>, name: string, allowed: readonly T[], dflt: T): T {
  const v = fileHeader(c, name);
  if (v === undefined) return dflt;
  if (!(allowed as readonly string[]).includes(v)) throw new ValidationError(`Invalid X-SVC-${name} header "${v}": expected one of ${allowed.join(', ')}`);
  return v as T;
}

/** Response headers under both names: the `lxc` CLI reads only the X-LXD-* ones. */
function ownerHeaders(c: Context<AppEnv>, o: Owner, type: string): void {
  const values = { uid: String(o.uid), gid: String(o.gid), mode: o.mode.toString(8).padStart(4, '0'), type };
  for (const [k, v] of Object.entries(values)) {
    c.header(`X-SVC-${k}`, v);
    c.header(`X-LXD-${k}`, v);
  }
}

/**
 * `/1.0/containers/<name>/files?path=`: read, write and delete files of a container, running
 * (through its mount namespace) or stopped (its rootfs), with ownership as the container sees it.
 * Every path is resolved inside the container's root (src/host/container-files/).
 */
export function registerContainerFileRoutes(app: Hono<AppEnv>, deps: ApiDeps): void {
  const lxcPath = lxcPathOf(deps.stateDir);
  /**
   * The container with its root volume's pool, by project and name: a file request is a hot path, so it
   * is read once and kept until a container, pool or volume write (data_versions) changes it.
   */
  const targets = createVersionedCache(
    () => readDataVersion(deps.db, ['containers', 'storage_pools', 'storage_volumes']),
    async (key: string): Promise<Target> => {
      const [project, name] = key.split('\0') as [string, string];
      const [row] = await deps.db
        .select({ ct: containers, pool: storagePools })
        .from(containers)
        .leftJoin(storageVolumes, eq(storageVolumes.id, containers.id))
        .leftJoin(storagePools, eq(storagePools.name, storageVolumes.pool))
        .where(and(eq(containers.project, project), eq(containers.name, name), isNull(containers.deletingAt)))
        .limit(1);
      if (!row) throw new NotFoundError(`Container "${name}" not found`);
      return { ...row.ct, pool: row.pool };
    },
    256,
  );

  const target = async (c: Context<AppEnv>): Promise<{ c: Target; path: string }> => {
    const name = validateContainerName(param(c, 'name'));
    const p = c.req.query('path');
    if (p === undefined || p === '') throw new ValidationError('Missing query parameter "path" (a path inside the container)');
    return { c: await targets.get(`${c.get('project')}\0${name}`), path: p };
  };

  /** The container's root filesystem directory on its pool. */
  const rootfsOf = (ct: Target): string | undefined =>
    ct.pool ? path.join(deps.storage.driverFor(ct.pool.driver).volumePath(poolSpecOf(ct.pool, deps.stateDir), { id: ct.id, type: 'container' }), 'rootfs') : undefined;

  /** The rendered LXC config of a container, re-read only when the file changed (size and mtime). */
  const configs = new Map<string, { stamp: string; text: string }>();
  const lxcConfigOf = (id: string): string => {
    const file = path.join(lxcPath, id, 'config');
    const st = fs.statSync(file, { throwIfNoEntry: false });
    if (!st) return '';
    const stamp = `${st.ino}:${st.size}:${st.mtimeMs}`;
    const hit = configs.get(id);
    if (hit?.stamp === stamp) return hit.text;
    const text = fs.readFileSync(file, 'utf8');
    if (configs.size >= 1024) configs.delete(configs.keys().next().value!);
    configs.set(id, { stamp, text });
    return text;
  };

  /**
   * The running container's mount namespace when it has one, else its rootfs. Its LXC config (the
   * rendered one; a running container's mounts are checked again by device and inode where used)
   * names the ids an unprivileged container maps and the host directories it has idmapped.
   */
  const openFs = async (ct: Target): Promise<ContainerFs> => {
    const rootfs = rootfsOf(ct);
    const lxcConfig = lxcConfigOf(ct.id);
    const live = await containerState({ name: ct.id, lxcPath });
    if (live.state !== 'STOPPED' && live.pid !== undefined && live.pid > 0) {
      const view = openProcView(live.pid, ct.id, idmappedSources(lxcConfig, rootfs));
      if (view) return view;
    }
    if (!rootfs) throw new ValidationError(`Container "${ct.name}" has no root filesystem yet`);
    try {
      return openRootfsView(rootfs, parseLxcIdmap(lxcConfig));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') throw new ValidationError(`Container "${ct.name}" has no root filesystem yet`);
      throw e;
    }
  };

  const withFs = async <T>(ct: Target, p: string, f: (fsys: ContainerFs) => Promise<T>): Promise<T> => {
    const fsys = await openFs(ct);
    try {
      return await f(fsys);
    } catch (e) {
      throw fsError(e, p);
    } finally {
      fsys.close();
    }
  };

  route(app, '/1.0/containers/:name/files', {
    GET: async (c) => {
      const { c: ct, path: p } = await target(c);
      const entry = await withFs(ct, p, (fsys) => readEntry(fsys, p));
      ownerHeaders(c, entry, entry.type);
      if (entry.type === 'directory') return sync(c, entry.entries);
      if (entry.type === 'symlink') {
        c.header('Content-Type', 'application/octet-stream');
        return c.body(entry.target, 200);
      }
      c.header('Content-Type', 'application/octet-stream');
      c.header('Content-Length', String(entry.size));
      if (entry.data) {
        if (entry.data.length === 0) return c.body(null, 200);
        return c.body(new Uint8Array(entry.data.buffer, entry.data.byteOffset, entry.data.length) as Uint8Array<ArrayBuffer>, 200);
      }
      // The size when opened: a file growing meanwhile is served as it was (Content-Length holds).
      return c.body(Readable.toWeb(entry.handle.createReadStream({ start: 0, end: entry.size - 1, autoClose: true })) as ReadableStream);
    },
    POST: async (c) => {
      const { c: ct, path: p } = await target(c);
      const req: WriteRequest = { uid: idHeader(c, 'uid'), gid: idHeader(c, 'gid'), mode: parseModeHeader(fileHeader(c, 'mode')) };
      const type = oneOf(c, 'type', ['file', 'directory', 'symlink'] as const, 'file');
      const write = oneOf(c, 'write', ['overwrite', 'append'] as const, 'overwrite');
      await withFs(ct, p, async (fsys) => {
        if (type === 'directory') return makeDirectory(fsys, p, req);
        if (type === 'symlink') return makeSymlink(fsys, p, Buffer.from(await readBodyLimited(c, MAX_SYMLINK_BODY)).toString('utf8'), req);
        const length = Number(c.req.header('content-length') ?? NaN);
        // A small body is read whole first (one write, no stream); larger ones are streamed to the file.
        const body =
          !c.req.raw.body || (Number.isSafeInteger(length) && length <= SMALL_FILE)
            ? Buffer.from(await c.req.arrayBuffer())
            : (c.req.raw.body as unknown as AsyncIterable<Uint8Array>);
        return writeFile(fsys, p, { ...req, append: write === 'append' }, body);
      });
      return sync(c, {});
    },
    DELETE: async (c) => {
      const { c: ct, path: p } = await target(c);
      await withFs(ct, p, async (fsys) => removeEntry(fsys, p));
      return sync(c, {});
    },
  });
}
