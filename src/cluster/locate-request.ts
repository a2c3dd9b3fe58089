import { and, eq } from 'drizzle-orm';
import type { Db } from '../db/types.ts';
import { containers, operations, storageVolumes } from '../desired/schema/index.ts';

/** What a request is about, as far as where it must run: a container, a custom volume, an operation, or a create. */
export type RequestSubject =
  | { kind: 'container'; project: string; name: string }
  | { kind: 'volume'; pool: string; name: string }
  | { kind: 'operation'; id: string }
  | { kind: 'create'; target: string | undefined; placed: boolean }
  | undefined;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Pure: the subject of a request by its method, path and query (undefined: served by whichever member got it). */
export function parseRequestSubject(method: string, pathname: string, query: URLSearchParams): RequestSubject {
  const seg = pathname.split('/').slice(1).map(decodeURIComponent);
  if (seg[0] !== '1.0') return undefined;
  const target = query.get('target') || undefined;
  // /1.0/instances is the same API (LXD 4+ clients, lxc once `instances` is announced)
  if (seg[1] === 'containers' || seg[1] === 'instances') {
    // A create is placed (target, else the least loaded member); every other verb goes where the container is.
    if (seg.length === 2) return method === 'POST' ? { kind: 'create', target, placed: true } : undefined;
    if (seg[2]) return { kind: 'container', project: query.get('project') || 'default', name: seg[2] };
  }
  if (seg[1] === 'operations' && seg[2] && UUID.test(seg[2])) return { kind: 'operation', id: seg[2] };
  if (seg[1] === 'storage-pools' && seg[3] === 'volumes' && seg[4] === 'custom') {
    if (seg.length === 5) return method === 'POST' && target ? { kind: 'create', target, placed: false } : undefined;
    if (seg[5]) return { kind: 'volume', pool: seg[2]!, name: seg[5] };
  }
  return undefined;
}

/** The member holding a subject's object (undefined: not found here, the local route answers). */
export async function locateSubject(db: Db, s: Exclude<RequestSubject, undefined>): Promise<string | undefined> {
  if (s.kind === 'container') {
    const [r] = await db
      .select({ at: containers.location })
      .from(containers)
      .where(and(eq(containers.project, s.project), eq(containers.name, s.name)));
    return r?.at || undefined;
  }
  if (s.kind === 'volume') {
    const [r] = await db
      .select({ at: storageVolumes.location })
      .from(storageVolumes)
      .where(and(eq(storageVolumes.pool, s.pool), eq(storageVolumes.type, 'custom'), eq(storageVolumes.name, s.name)));
    return r?.at || undefined;
  }
  if (s.kind === 'operation') {
    const [r] = await db.select({ at: operations.node }).from(operations).where(eq(operations.id, s.id));
    return r?.at || undefined;
  }
  return undefined;
}
