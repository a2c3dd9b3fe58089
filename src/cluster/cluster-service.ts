import type { Db } from '../db/types.ts';
import { addCertificate, listCertificates } from '../desired/certificates.ts';
import { ConflictError, ForbiddenError, NotFoundError, UnavailableError, ValidationError } from '../desired/errors.ts';
import { readServerKeys, verifyPassword } from '../desired/server-config.ts';
import {
  fingerprintOfPem,
  readClusterCertificate,
  writeClusterCertificate,
  type ClusterCertificate,
} from './cluster-certificate.ts';
import { requestMember } from './member-client.ts';
import {
  countHeld,
  deleteMember,
  leastLoadedMember,
  listMembers,
  markClustered,
  markUnclustered,
  readMember,
  renameMember,
  type MemberView,
} from './members.ts';
import { removeHeldRows } from './remove-held-rows.ts';

/** The trust store's name for the cluster certificate: members call each other with it. */
export const CLUSTER_CERT_NAME = 'svcd-cluster';

export interface JoinRequest {
  server_name?: string | undefined;
  server_address?: string | undefined;
  cluster_address?: string | undefined;
  cluster_certificate?: string | undefined;
  cluster_password?: string | undefined;
  member_config?: unknown[] | undefined;
}

export interface ClusterServiceDeps {
  db: Db;
  node: string;
  stateDir: string;
  /** What this member presents now (its server certificate until it is clustered); changed in place on join. */
  serving: { cert: string; key: string; fingerprint: string };
  /** Present another certificate on the HTTPS listener (the cluster's, after a join). */
  setCertificate(c: { cert: string; key: string }): void;
}

/**
 * The cluster as one member sees it: bootstrap, join and leave; the members; where an object is and how to
 * reach the member holding it. Every member reads and writes one PostgreSQL database, so there is no
 * consensus here: a member row, a heartbeat, and one certificate presented by all.
 */
export function createClusterService(deps: ClusterServiceDeps) {
  const { db, node } = deps;
  let cert: ClusterCertificate | undefined;
  /** Operations answered through a forward, by id: their row may not be written yet when the client asks next. */
  const opOwners = new Map<string, string>();

  async function self(): Promise<MemberView> {
    return readMember(db, node);
  }

  /** The address other members reach this one at: server_address, else a concrete core.https_address. */
  async function ownAddress(given: string | undefined): Promise<string> {
    const { 'core.https_address': https = '' } = await readServerKeys(db, node, ['core.https_address']);
    const address = given || https;
    if (!address)
      throw new ValidationError(
        'Invalid "server_address": set core.https_address first (members reach each other over HTTPS)',
      );
    const m = /^(?:\[([^\]]+)\]|([^:]*)):(\d+)$/.exec(address);
    if (!m || !(m[1] ?? m[2]) || ['0.0.0.0', '::'].includes(m[1] ?? m[2]!))
      throw new ValidationError(
        `Invalid "server_address": "${address}" is not an address other members can reach (give host:port)`,
      );
    return address;
  }

  async function checkEmpty(): Promise<void> {
    const held = await countHeld(db, node);
    if (held.containers || held.volumes)
      throw new ValidationError(
        `This member holds ${held.containers} container(s) and ${held.volumes} custom volume(s): only an empty server can join a cluster`,
      );
  }

  async function trustClusterCertificate(pem: string): Promise<void> {
    const fp = fingerprintOfPem(pem);
    if ((await listCertificates(db)).some((c) => c.fingerprint === fp)) return;
    await addCertificate(db, { pem, name: CLUSTER_CERT_NAME, type: 'client' }).catch((e: unknown) => {
      if (!(e instanceof ConflictError)) throw e;
    });
  }

  return {
    /** Awaited before a request is forwarded to a member (the agent relays that member's events first). */
    beforeForward: async (_m: MemberView): Promise<void> => {},

    async init(): Promise<void> {
      if ((await self().catch(() => undefined))?.clustered) cert = await readClusterCertificate(deps.stateDir);
      if (cert) Object.assign(deps.serving, cert);
    },
    /** No query: only this service changes whether this member is clustered (an online member is never force-removed). */
    async clustered(): Promise<boolean> {
      return !!cert;
    },
    /** The certificate and key members call each other with (undefined while not clustered). */
    certificate: () => cert,

    async info() {
      return { server_name: node, enabled: !!cert, member_config: [] as unknown[] };
    },

    async bootstrap(req: { server_name?: string | undefined; server_address?: string | undefined }): Promise<void> {
      if (req.server_name && req.server_name !== node)
        throw new ValidationError(`Invalid "server_name": this member is "${node}" (its SVCD_NODE_NAME)`);
      if ((await self()).clustered) throw new ValidationError('This server is already clustered');
      const address = await ownAddress(req.server_address);
      // The bootstrap member's own certificate becomes the cluster's (as in LXD): clients that trust it already keep trusting it.
      const own = { cert: deps.serving.cert, key: deps.serving.key };
      await writeClusterCertificate(deps.stateDir, own);
      await trustClusterCertificate(own.cert);
      await markClustered(db, node, { address, roles: ['database'] });
      cert = { ...own, fingerprint: fingerprintOfPem(own.cert) };
    },

    async join(req: JoinRequest): Promise<void> {
      if (req.server_name && req.server_name !== node)
        throw new ValidationError(`Invalid "server_name": this member is "${node}" (its SVCD_NODE_NAME)`);
      if ((await self()).clustered) throw new ValidationError('This server is already clustered');
      if (!req.cluster_certificate)
        throw new ValidationError('Invalid "cluster_certificate": the cluster\'s certificate is required');
      if (!req.cluster_password)
        throw new ValidationError('Invalid "cluster_password": the cluster\'s trust password is required');
      if (req.member_config?.length)
        throw new ValidationError(
          'Invalid "member_config": member-specific pool and network keys are not supported at join',
        );
      let pin: string;
      try {
        pin = fingerprintOfPem(req.cluster_certificate);
      } catch {
        throw new ValidationError('Invalid "cluster_certificate": not a PEM certificate');
      }
      const address = await ownAddress(req.server_address);
      await checkEmpty();
      let res: Awaited<ReturnType<typeof requestMember>>;
      try {
        res = await requestMember({
          address: req.cluster_address ?? '',
          pin,
          client: deps.serving,
          method: 'POST',
          path: '/internal/cluster/accept',
          headers: { 'content-type': 'application/json' },
          body: Buffer.from(
            JSON.stringify({ server_name: node, server_address: address, password: req.cluster_password }),
          ),
          timeoutMs: 15_000,
        });
      } catch (e) {
        throw new ValidationError(
          `Invalid "cluster_address": cannot reach the cluster at "${req.cluster_address}": ${(e as Error).message}`,
        );
      }
      const answer = JSON.parse(res.body.toString() || '{}') as {
        error?: string;
        metadata?: { certificate?: string; key?: string };
      };
      if (res.status === 403)
        throw new ForbiddenError(
          `The cluster refused to accept this member: ${answer.error ?? 'wrong trust password'}`,
        );
      if (res.status !== 200 || !answer.metadata?.certificate || !answer.metadata.key)
        throw new ValidationError(
          `The cluster refused to accept this member: ${answer.error ?? `status ${res.status}`}`,
        );
      // One database: the cluster certificate the bootstrap member trusts must be in this member's database too.
      const fp = fingerprintOfPem(answer.metadata.certificate);
      if (!(await listCertificates(db)).some((c) => c.fingerprint === fp && c.name === CLUSTER_CERT_NAME))
        throw new ValidationError(
          "The cluster keeps its state in another database: start this member with the cluster's DATABASE_URL to join it (joining over the embedded engine is not supported)",
        );
      await writeClusterCertificate(deps.stateDir, { cert: answer.metadata.certificate, key: answer.metadata.key });
      cert = { cert: answer.metadata.certificate, key: answer.metadata.key, fingerprint: fp };
      await markClustered(db, node, { address, roles: ['database'] });
      Object.assign(deps.serving, cert);
      deps.setCertificate(cert);
    },

    /** On the cluster's side of a join: the trust password checked, the joiner gets the certificate and key. */
    async accept(req: { server_name?: string; password?: string }): Promise<{ certificate: string; key: string }> {
      if (!cert || !(await self()).clustered) throw new ValidationError('This server is not clustered');
      const { 'core.trust_password': hash } = await readServerKeys(db, node, ['core.trust_password']);
      if (!req.password || !(await verifyPassword(req.password, hash)))
        throw new ForbiddenError('not authorized: wrong or missing trust password');
      const joiner = (await listMembers(db)).find((m) => m.name === req.server_name);
      if (!joiner)
        throw new ValidationError(
          `No daemon named "${req.server_name}" uses the cluster's database: start it with the cluster's DATABASE_URL`,
        );
      if (joiner.clustered) throw new ConflictError(`Cluster member "${req.server_name}" already exists`);
      return { certificate: cert.cert, key: cert.key };
    },

    /** {enabled: false}: the last member may leave (the cluster ends); with others, remove this member instead. */
    async leave(): Promise<void> {
      if (!(await self()).clustered) return;
      const others = (await listMembers(db, { clusteredOnly: true })).filter((m) => m.name !== node);
      if (others.length)
        throw new ValidationError(
          `Other members are in the cluster (${others.map((m) => m.name).join(', ')}): remove this member with DELETE /1.0/cluster/members/${node}`,
        );
      await markUnclustered(db, node);
      cert = undefined;
    },

    members: () => listMembers(db, { clusteredOnly: true }),

    async member(name: string): Promise<MemberView> {
      const m = await readMember(db, name);
      if (!m.clustered) throw new NotFoundError(`Cluster member "${name}" not found`);
      return m;
    },

    async rename(from: string, to: string): Promise<void> {
      const m = await this.member(from);
      if (!to) throw new ValidationError('Invalid "server_name": a new name is required');
      if (m.online)
        throw new ValidationError(
          `Cluster member "${from}" is running: stop it, rename it, and start it again with SVCD_NODE_NAME=${to}`,
        );
      await renameMember(db, from, to);
    },

    /**
     * This member leaves the cluster (it must hold nothing), or a dead one is removed with `force`, and
     * the rows of what it held with it (its host is gone with it).
     */
    async remove(name: string, force: boolean): Promise<void> {
      const m = await this.member(name);
      if (name === node) {
        const held = await countHeld(db, node);
        if (held.containers || held.volumes)
          throw new ValidationError(
            `Cluster member "${name}" holds ${held.containers} container(s) and ${held.volumes} custom volume(s): move or delete them first`,
          );
        const others = (await listMembers(db, { clusteredOnly: true })).filter((o) => o.name !== node);
        if (!others.length)
          throw new ValidationError(`Cluster member "${name}" is the last member: disable clustering instead`);
        await markUnclustered(db, node);
        cert = undefined;
        return;
      }
      if (m.online) throw new ConflictError(`Cluster member "${name}" is online: the request goes to it`);
      if (!force)
        throw new ValidationError(
          `Cluster member "${name}" is offline: remove it with force (its containers' rows go with it)`,
        );
      await removeHeldRows(db, name);
      await deleteMember(db, name);
    },

    /** Where a create without `target` goes: the online member holding fewest containers. */
    placement: async (): Promise<string> => (await leastLoadedMember(db)) ?? node,

    rememberOperation(id: string, member: string): void {
      opOwners.set(id, member);
      if (opOwners.size > 10_000) opOwners.delete(opOwners.keys().next().value!);
    },
    operationMember: (id: string): string | undefined => opOwners.get(id),

    /** A request to another member, with the cluster certificate (a member's own verbs: its removal). */
    async callMember(name: string, method: string, path: string) {
      const m = await this.reach(name);
      if (!cert) throw new ValidationError('This server is not clustered');
      return requestMember({
        address: m.address,
        pin: cert.fingerprint,
        client: cert,
        method,
        path,
        headers: { 'x-svcd-forwarded': node },
      });
    },

    /** A member to forward to: online and reachable, or a clear error naming it. */
    async reach(name: string): Promise<MemberView> {
      const m = await readMember(db, name).catch(() => undefined);
      if (!m?.clustered) throw new NotFoundError(`Cluster member "${name}" not found`);
      if (!m.online) throw new MemberOfflineError(name);
      return m;
    },
  };
}
export type ClusterService = ReturnType<typeof createClusterService>;

/** A request for an object on a member that has not renewed its heartbeat: answered at once, never after a timeout. */
export class MemberOfflineError extends UnavailableError {
  constructor(readonly member: string) {
    super(`Cluster member "${member}" is offline: it holds this object, try again when it is back`);
  }
}
