import type { MiddlewareHandler } from 'hono';
import { keepReadBody } from '../api/body.ts';
import type { AppEnv } from '../api/context.ts';
import type { Logger } from 'pino';
import type { Db } from '../db/types.ts';
import { UnavailableError } from '../desired/errors.ts';
import type { ClusterService } from './cluster-service.ts';
import { locateSubject, parseRequestSubject } from './locate-request.ts';
import { MemberNotReached, requestMember, type MemberResponse } from './member-client.ts';

/** Set on a request one member forwards to another: the receiver serves it itself (never forwards it again). */
export const FORWARDED_HEADER = 'x-svcd-forwarded';
/** Members a placed create tries before it is refused. */
const MAX_PLACEMENTS = 3;
const HOP_HEADERS = new Set(['host', 'connection', 'content-length', 'transfer-encoding', 'keep-alive', 'upgrade']);

/**
 * Any member answers for every object: a request about a container, custom volume or operation another
 * member holds, or a create placed on another member, is carried out there, over HTTPS with the cluster
 * certificate. Everything else (lists, profiles, images, pools...) is served here from the shared database.
 */
export function createForwarder(deps: {
  db: Db;
  node: string;
  cluster: ClusterService;
  log?: Logger;
}): MiddlewareHandler<AppEnv> {
  const remember = (id: string, member: string) => deps.cluster.rememberOperation(id, member);
  return async (c, next) => {
    const cert = deps.cluster.certificate();
    if (!cert || c.get('caller').level !== 'trusted') return next();
    // Only a member (the cluster certificate) may say a request was forwarded already.
    if (c.req.header(FORWARDED_HEADER) && c.get('caller').fingerprint === cert.fingerprint) return next();
    const url = new URL(c.req.url);
    const subject = parseRequestSubject(c.req.method, url.pathname, url.searchParams);
    if (!subject) return next();
    // A create without target is placed; a member it cannot reach (dead, not yet shown offline) is skipped.
    const placed = subject.kind === 'create' && !subject.target && subject.placed;
    const skip = new Set<string>();
    let member: string | undefined;
    let res: MemberResponse | undefined;
    let body: Buffer | undefined;
    for (;;) {
      if (subject.kind === 'create')
        member = subject.target ?? (placed ? await deps.cluster.placement(skip) : undefined);
      else if (subject.kind === 'operation')
        member = deps.cluster.operationMember(subject.id) ?? (await locateSubject(deps.db, subject));
      else member = await locateSubject(deps.db, subject);
      if (!member || member === deps.node) {
        if (body) keepReadBody(c, body);
        return next();
      }
      const to = await deps.cluster.reach(member).catch((e: unknown) => e as Error);
      if (to instanceof Error) {
        if (placed && skip.size < MAX_PLACEMENTS) {
          skip.add(member);
          continue;
        }
        throw to;
      }
      await deps.cluster.beforeForward(to);
      const headers: Record<string, string> = { [FORWARDED_HEADER]: deps.node };
      c.req.raw.headers.forEach((v, k) => {
        if (!HOP_HEADERS.has(k) && k !== FORWARDED_HEADER) headers[k] = v;
      });
      if (!['GET', 'HEAD'].includes(c.req.method)) body ??= Buffer.from(await c.req.arrayBuffer());
      const sent = await requestMember({
        address: to.address,
        pin: cert.fingerprint,
        client: cert,
        method: c.req.method,
        path: url.pathname + url.search,
        headers,
        body,
        // A wait may be long (its timeout is the client's); anything else answers within a minute.
        timeoutMs: url.pathname.endsWith('/wait') ? 24 * 3600_000 : 120_000,
      }).catch((e: unknown) => e as Error);
      if (!(sent instanceof Error)) {
        res = sent;
        break;
      }
      if (placed && sent instanceof MemberNotReached && skip.size < MAX_PLACEMENTS) {
        deps.log?.warn({ member, err: sent.message }, 'placed create: member not reached, placing it elsewhere');
        skip.add(member);
        continue;
      }
      throw new MemberUnreachable(member, sent.message, subject.kind === 'create');
    }
    const out = new Headers();
    for (const [k, v] of Object.entries(res.headers))
      if (v !== undefined && !HOP_HEADERS.has(k)) out.set(k, Array.isArray(v) ? v.join(', ') : v);
    const op = /^\/1\.0\/operations\/([0-9a-f-]{36})/.exec(String(res.headers.location ?? ''));
    if (op) remember(op[1]!, member!);
    else if (String(res.headers['content-type'] ?? '').includes('json') && res.body.length < 1 << 20) {
      const m = /"operation":"\/1\.0\/operations\/([0-9a-f-]{36})"/.exec(res.body.toString());
      if (m) remember(m[1]!, member!);
    }
    return new Response(res.status === 204 || res.status === 304 ? null : res.body, {
      status: res.status,
      headers: out,
    });
  };
}

/** The member holding the object (or a create's target) did not answer: 503, naming it. */
export class MemberUnreachable extends UnavailableError {
  constructor(member: string, why: string, create = false) {
    super(
      `Cluster member "${member}" ${create ? 'was to make it' : 'holds this object'} but cannot be reached: ${why}`,
    );
  }
}
