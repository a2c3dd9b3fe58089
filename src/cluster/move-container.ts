import type { Logger } from 'pino';
import type { Db } from '../db/types.ts';
import { listBackups } from '../desired/container-backups.ts';
import { CONTAINER_KIND, containerUrl, readContainerById } from '../desired/containers.ts';
import { ValidationError } from '../desired/errors.ts';
import { readFacts } from '../desired/reconcile-facts.ts';
import { readContainerRuntime } from '../desired/runtime-reads.ts';
import type { ContainerRow, OperationRow } from '../desired/schema/index.ts';
import type { LeavingMarks } from '../migration/leaving-marks.ts';
import type { ReceiveMoveRequest } from '../migration/receive-moved-container.ts';
import type { SendContainerRequest } from '../migration/send-container.ts';
import type { Operations } from '../operations/index.ts';
import type { ClusterService } from './cluster-service.ts';
import { copySourceOnMember } from './copy-from-member.ts';
import { runMemberOperation, type MemberEndpoint } from './member-operations.ts';

export interface ContainerMoverDeps {
  db: Db;
  node: string;
  ops: Pick<Operations, 'startTask'>;
  log: Logger;
  cluster: Pick<ClusterService, 'certificate' | 'member'>;
  migration: { sendContainer(ct: ContainerRow, req: SendContainerRequest): Promise<OperationRow> };
  leaving: LeavingMarks;
  reconcile: { enqueue(kind: string, key: string, reason: string): void };
}

/** LXD's refusal of a live move, worded for a host without CRIU. */
const LIVE_REFUSED =
  'Unable to move a running container live: CRIU is not available on this server (stop it first, or move it with --stateless)';

/**
 * `POST /1.0/containers/<name>?target=<member>` with `migration: true`, served by the member holding the
 * container, as LXD 5.0.2 moves an instance between members: a running one is stopped first (stateless, so
 * only with `live: false`) and started again on the target. The target pulls the snapshots and the volume
 * from this member's migration source over the operation websockets (pull, the cluster certificate on both
 * ends) and flips the row to itself in one transaction (receive-moved-container.ts); this member then
 * removes its copy. The row stays one row: same id, name and snapshots. A failed transfer changes nothing.
 */
export function createContainerMover(deps: ContainerMoverDeps) {
  async function check(ct: ContainerRow, target: string, name: string | undefined) {
    const cert = deps.cluster.certificate();
    if (!cert) throw new ValidationError('This server is not clustered: "target" names a cluster member');
    if (name && name !== ct.name)
      throw new ValidationError('A move to another member keeps the name: rename the container separately');
    if (target === ct.location) throw new ValidationError("Target must be different than instance's current location");
    const [to, me] = await Promise.all([deps.cluster.member(target), deps.cluster.member(deps.node)]);
    if (!to.online) throw new ValidationError(`Target cluster member "${target}" is offline`);
    if ((await listBackups(deps.db, ct.id)).length)
      throw new ValidationError(
        `Container "${ct.name}" has backups, which stay on this member: export and delete them before moving it`,
      );
    const at = (address: string): MemberEndpoint => ({ address, cert, from: deps.node });
    return { target: at(to.address), self: at(me.address), selfAddress: me.address, cert };
  }

  return {
    /** The other member's migration source of a copy from a container it holds (copy-from-member.ts). */
    copySource: (project: string, source: string, containerOnly: boolean) =>
      copySourceOnMember(deps, project, source, containerOnly),

    async move(ct: ContainerRow, target: string, req: { live: boolean; name?: string | undefined }) {
      const peers = await check(ct, target, req.name);
      const rt = await readContainerRuntime(deps.db, ct.id);
      const running = ct.power !== 'stopped' || (!!rt && rt.state !== 'STOPPED');
      if (running && req.live) throw new ValidationError(LIVE_REFUSED);
      const statePath = `/1.0/containers/${encodeURIComponent(ct.name)}/state?project=${encodeURIComponent(ct.project)}`;
      return deps.ops.startTask(
        {
          class: 'task',
          description: 'Migrating container',
          project: ct.project,
          resources: { containers: [containerUrl(ct)] },
        },
        async () => {
          if (running) await runMemberOperation(peers.self, 'PUT', statePath, { action: 'stop', timeout: 30 });
          try {
            await transfer(ct.id, peers).catch((e: unknown) => {
              throw new Error(`Moving container "${ct.name}" to member "${target}" failed: ${(e as Error).message}`);
            });
          } catch (e) {
            if (!(await movedTo(ct.id, target))) {
              await deps.leaving.remove(ct.id);
              if (running) await runMemberOperation(peers.self, 'PUT', statePath, { action: 'start' }).catch(() => {});
              throw e;
            }
            // The row is the target's already (its convergence failed): this copy goes all the same.
            release(ct.id, target);
            throw e;
          }
          release(ct.id, target);
          if (running) await runMemberOperation(peers.target, 'PUT', statePath, { action: 'start' });
        },
      );
    },
  };

  /** The source role here, the target's sink pulling from it; resolves once the target committed and converged. */
  async function transfer(id: string, peers: Awaited<ReturnType<typeof check>>) {
    const ct = await readContainerById(deps.db, id);
    if (!ct || ct.location !== deps.node) throw new ValidationError('The container was deleted or moved meanwhile');
    // What this host has of it, for its removal here once the target holds it (the target rewrites the facts).
    await deps.leaving.write(ct.id, await readFacts(deps.db, CONTAINER_KIND, ct.id));
    const source = await deps.migration.sendContainer(ct, { live: false, containerOnly: false });
    const secrets = Object.fromEntries(
      Object.entries(source.metadata ?? {}).filter((e): e is [string, string] => typeof e[1] === 'string'),
    );
    const body: ReceiveMoveRequest = {
      id: ct.id,
      from: deps.node,
      generation: ct.generation,
      operation: `https://${peers.selfAddress}/1.0/operations/${source.id}`,
      secrets,
      certificate: peers.cert.cert,
    };
    await runMemberOperation(peers.target, 'POST', '/internal/cluster/move-in', body);
  }

  async function movedTo(id: string, target: string): Promise<boolean> {
    return (await readContainerById(deps.db, id).catch(() => undefined))?.location === target;
  }

  /** This host's copy goes, by the container reconciler (it holds the host adapters and the key's queue). */
  function release(id: string, target: string) {
    deps.reconcile.enqueue(CONTAINER_KIND, id, `moved to ${target}`);
  }
}
export type ContainerMover = ReturnType<typeof createContainerMover>;
