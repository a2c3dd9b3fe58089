/**
 * Clusters of svcd daemons on one PostgreSQL database, for the cluster suites: n hosts (support/two-hosts.ts)
 * started on a throw-away database, the first bootstrapped, the others joined with the trust password.
 */
import assert from 'node:assert/strict';
import { waitOp } from './container-env.ts';
import { ensureRootSubids } from './lxc-host.ts';
import { createTestDatabase } from './postgres.ts';
import { startHosts, type Host } from './two-hosts.ts';

export const CLUSTER_PASSWORD = 'clus-secret';

export interface TestCluster {
  hosts: Host[];
  databaseUrl: string;
  drop(): Promise<void>;
}

/** n daemons on one new database (not clustered yet). */
export async function startClusterHosts(n: number): Promise<TestCluster> {
  await ensureRootSubids();
  const db = await createTestDatabase();
  const hosts = await startHosts(n, { databaseUrl: db.url });
  return { hosts, databaseUrl: db.url, drop: db.drop };
}

/** Bootstrap `first` (its trust password set), then join each of `others` through it. */
export async function formCluster(first: Host, others: Host[]): Promise<void> {
  assert.equal((await first.api.patch('/1.0', { config: { 'core.trust_password': CLUSTER_PASSWORD } })).status, 200);
  await waitOp(first.api, await first.api.put('/1.0/cluster', { server_name: first.name, enabled: true }));
  for (const h of others) await joinCluster(h, first);
}

/** Join `h` through member `via`, which presents `clusterCert` (the bootstrap member's certificate). */
export async function joinCluster(
  h: Host,
  via: Host,
  password = CLUSTER_PASSWORD,
  clusterCert = via.cert,
  memberConfig: unknown[] = [],
) {
  return waitOp(
    h.api,
    await h.api.put('/1.0/cluster', {
      server_name: h.name,
      enabled: true,
      server_address: `127.0.0.1:${h.port}`,
      cluster_address: `127.0.0.1:${via.port}`,
      cluster_certificate: clusterCert,
      cluster_password: password,
      member_config: memberConfig,
    }),
  );
}
