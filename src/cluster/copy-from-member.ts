import type { Db } from '../db/types.ts';
import { readContainer } from '../desired/containers.ts';
import { UnavailableError, ValidationError } from '../desired/errors.ts';
import type { ClusterService } from './cluster-service.ts';
import { callMemberJson } from './member-operations.ts';

/** The migration source a copy pulls from: another member's operation, its secrets, the cluster certificate. */
export interface MemberSource {
  operation: string;
  secrets: Record<string, string>;
  certificate: string;
}

/**
 * A copy (`source.type: copy`) of a container another member holds, as LXD copies across members: that
 * member serves a migration source for it (or for one of its snapshots), which the copy's member pulls from
 * like any migration. Undefined when the source is here (the local copy applies) or this member is not
 * clustered.
 */
export async function copySourceOnMember(
  deps: { db: Db; node: string; cluster: Pick<ClusterService, 'certificate' | 'member'> },
  project: string,
  source: string,
  containerOnly: boolean,
): Promise<MemberSource | undefined> {
  const cert = deps.cluster.certificate();
  if (!cert) return undefined;
  const [name, snap] = source.split('/', 2) as [string, string | undefined];
  const src = await readContainer(deps.db, project, name);
  if (!src.location || src.location === deps.node) return undefined;
  const holder = await deps.cluster.member(src.location);
  if (!holder.online)
    throw new UnavailableError(`Cluster member "${src.location}" holds container "${name}" but is offline`);
  const at = `/1.0/containers/${encodeURIComponent(name)}${snap ? `/snapshots/${encodeURIComponent(snap)}` : ''}`;
  const started = await callMemberJson(
    { address: holder.address, cert, from: deps.node },
    'POST',
    `${at}?project=${encodeURIComponent(project)}`,
    { name, migration: true, live: false, container_only: containerOnly },
  );
  const op = started.metadata as { id?: string; metadata?: Record<string, unknown> } | undefined;
  const secrets = Object.fromEntries(
    Object.entries(op?.metadata ?? {}).filter((e): e is [string, string] => typeof e[1] === 'string'),
  );
  if (!op?.id || !secrets.control || !secrets.fs)
    throw new ValidationError(`Cluster member "${src.location}" answered no migration source for "${source}"`);
  return { operation: `https://${holder.address}/1.0/operations/${op.id}`, secrets, certificate: cert.cert };
}
