import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { CLUSTER_PASSWORD } from '../support/cluster.ts';
import { waitOp } from '../support/container-env.ts';
import { expectError } from '../support/http.ts';
import { startHosts, stopHosts, type Host } from '../support/two-hosts.ts';

/**
 * On the default embedded engine each daemon has its own private database: one may bootstrap a cluster of
 * itself, but another cannot join it (sharing the bootstrap member's server is not built): refused clearly,
 * nothing changed on either side.
 */
describe('clusters on the embedded engine', () => {
  let a: Host;
  let b: Host;
  before(async () => {
    [a, b] = (await startHosts(2)) as [Host, Host];
  });
  after(() => stopHosts([a, b]));

  test('bootstrap works; a join from another database is refused, naming DATABASE_URL', async () => {
    assert.equal((await a.api.patch('/1.0', { config: { 'core.trust_password': CLUSTER_PASSWORD } })).status, 200);
    await waitOp(a.api, await a.api.put('/1.0/cluster', { server_name: 'a', enabled: true }));
    assert.equal((await a.api.get('/1.0/cluster/members?recursion=1')).json.metadata[0].status, 'Online');
    const join = await b.api.put('/1.0/cluster', {
      server_name: 'b',
      enabled: true,
      server_address: `127.0.0.1:${b.port}`,
      cluster_address: `127.0.0.1:${a.port}`,
      cluster_certificate: a.cert,
      cluster_password: CLUSTER_PASSWORD,
    });
    assert.match(expectError(join, 400), /DATABASE_URL/);
    assert.equal((await b.api.get('/1.0/cluster')).json.metadata.enabled, false);
    assert.deepEqual((await a.api.get('/1.0/cluster/members')).json.metadata, ['/1.0/cluster/members/a']);
    // The last member may leave: a standalone server again.
    await waitOp(a.api, await a.api.put('/1.0/cluster', { enabled: false }));
    assert.equal((await a.api.get('/1.0')).json.metadata.environment.server_clustered, false);
  });
});
