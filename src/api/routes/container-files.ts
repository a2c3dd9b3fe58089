import { Readable } from 'node:stream';
import type { Context, Hono } from 'hono';
import { ValidationError } from '../../desired/errors.ts';
import { validateContainerName } from '../../desired/names.ts';
import { readBodyLimited } from '../body.ts';
import type { AppEnv } from '../context.ts';
import type { ApiDeps } from '../deps.ts';
import { sync } from '../envelope.ts';
import type { ContainerLocation, FileOwner, FileWriteRequest } from '../host-service.ts';
import { param } from '../router.ts';
import { instanceRoute } from '../instance-collection.ts';

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
  if (!/^\d{1,10}$/.test(v) || Number(v) > 4294967294)
    throw new ValidationError(
      `Invalid X-SVC-${name} header "${v}": expected an id from 0 to 4294967294 (or -1 for unset)`,
    );
  return Number(v);
}

/**
 * The mode header, read as LXD does (Go's base-0 integer syntax: `0644` and `0o644` are octal, `0x`
 * hex, plain digits decimal); the `lxc` CLI sends `%04o`, pylxd a leading 0. -1 counts as absent.
 */
export function parseModeHeader(v: string | undefined): number | undefined {
  if (v === undefined || v === '-1') return undefined;
  const m = /^(?:0[oO]?([0-7]+)|0[xX]([0-9a-fA-F]+)|0[bB]([01]+)|([1-9]\d*)|(0))$/.exec(v.replace(/_/g, ''));
  const n = !m
    ? NaN
    : m[1] !== undefined
      ? parseInt(m[1], 8)
      : m[2] !== undefined
        ? parseInt(m[2], 16)
        : m[3] !== undefined
          ? parseInt(m[3], 2)
          : Number(m[4] ?? 0);
  if (!Number.isSafeInteger(n) || n > 0o7777)
    throw new ValidationError(
      `Invalid X-SVC-mode header "${v}": expected permission bits such as 0644 (at most 07777)`,
    );
  return n;
}

function oneOf<T extends string>(c: Context<AppEnv>, name: string, allowed: readonly T[], dflt: T): T {
  const v = fileHeader(c, name);
  if (v === undefined) return dflt;
  if (!(allowed as readonly string[]).includes(v))
    throw new ValidationError(`Invalid X-SVC-${name} header "${v}": expected one of ${allowed.join(', ')}`);
  return v as T;
}

/** Response headers under both names: the `lxc` CLI reads only the X-LXD-* ones. */
function ownerHeaders(c: Context<AppEnv>, o: FileOwner, type: string): void {
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
  const { files, locate } = deps.containerHost;

  const target = async (c: Context<AppEnv>): Promise<{ ct: ContainerLocation; path: string }> => {
    const name = validateContainerName(param(c, 'name'));
    const p = c.req.query('path');
    if (p === undefined || p === '')
      throw new ValidationError('Missing query parameter "path" (a path inside the container)');
    return { ct: await locate({ project: c.get('project'), name }), path: p };
  };

  instanceRoute(app, '/:name/files', {
    GET: async (c) => {
      const { ct, path: p } = await target(c);
      const entry = await files.withFs(ct, p, (fsys) => fsys.read(p));
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
        return c.body(
          new Uint8Array(entry.data.buffer, entry.data.byteOffset, entry.data.length) as Uint8Array<ArrayBuffer>,
          200,
        );
      }
      // The size when opened: a file growing meanwhile is served as it was (Content-Length holds).
      return c.body(Readable.toWeb(entry.stream()) as ReadableStream);
    },
    POST: async (c) => {
      const { ct, path: p } = await target(c);
      const req: FileWriteRequest = {
        uid: idHeader(c, 'uid'),
        gid: idHeader(c, 'gid'),
        mode: parseModeHeader(fileHeader(c, 'mode')),
      };
      const type = oneOf(c, 'type', ['file', 'directory', 'symlink'] as const, 'file');
      const write = oneOf(c, 'write', ['overwrite', 'append'] as const, 'overwrite');
      await files.withFs(ct, p, async (fsys) => {
        if (type === 'directory') return fsys.makeDirectory(p, req);
        if (type === 'symlink')
          return fsys.makeSymlink(p, Buffer.from(await readBodyLimited(c, MAX_SYMLINK_BODY)).toString('utf8'), req);
        const length = Number(c.req.header('content-length') ?? NaN);
        // A small body is read whole first (one write, no stream); larger ones are streamed to the file.
        const body =
          !c.req.raw.body || (Number.isSafeInteger(length) && length <= files.smallFile)
            ? Buffer.from(await c.req.arrayBuffer())
            : (c.req.raw.body as unknown as AsyncIterable<Uint8Array>);
        return fsys.write(p, { ...req, append: write === 'append' }, body);
      });
      return sync(c, {});
    },
    DELETE: async (c) => {
      const { ct, path: p } = await target(c);
      await files.withFs(ct, p, async (fsys) => fsys.remove(p));
      return sync(c, {});
    },
  });
}
