/**
 * `core.debug_address` (pprof_http): a plain-HTTP debugging listener opened, moved and closed live by the
 * server config, serving live figures, a CPU profile and a heap snapshot of the daemon; never on unless set;
 * a bad address or one that cannot be bound is a 400 naming the key, and nothing is saved. Loopback only.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { startDaemon, type Daemon } from '../support/daemon.ts';
import { client, expectError, freePort, type Client } from '../support/http.ts';

/** GET over plain HTTP: status, headers and body (the first `limit` bytes when given). */
function get(port: number, path: string, limit?: number): Promise<{ status: number; type: string; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path, timeout: 60_000 }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        chunks.push(c);
        size += c.length;
        if (limit !== undefined && size >= limit) {
          res.destroy();
          resolve({
            status: res.statusCode ?? 0,
            type: String(res.headers['content-type']),
            body: Buffer.concat(chunks),
          });
        }
      });
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          type: String(res.headers['content-type']),
          body: Buffer.concat(chunks),
        }),
      );
      res.on('error', reject);
    });
    req.on('error', reject);
  });
}
const refused = (port: number) =>
  new Promise<boolean>((resolve) => {
    const s = net.connect({ host: '127.0.0.1', port }, () => {
      s.destroy();
      resolve(false);
    });
    s.on('error', () => resolve(true));
  });

describe('core.debug_address: the debugging listener', () => {
  let d: Daemon;
  let api: Client;
  const config = async () => (await api.get('/1.0')).json.metadata.config as Record<string, string>;

  before(async () => {
    d = await startDaemon();
    api = client({ socketPath: d.socketPath });
  });
  after(async () => d?.destroy());

  test('off unless set; bad values and busy ports are 400s naming the key, and nothing is saved', async () => {
    assert.equal((await config())['core.debug_address'], undefined);
    for (const bad of ['nope', '127.0.0.1', '127.0.0.1:99999', '[::1', 'a b:1']) {
      const msg = expectError(await api.patch('/1.0', { config: { 'core.debug_address': bad } }), 400);
      assert.match(msg, /core\.debug_address/, bad);
    }
    const busy = net.createServer();
    await new Promise<void>((r) => busy.listen(0, '127.0.0.1', () => r()));
    const port = (busy.address() as net.AddressInfo).port;
    try {
      const msg = expectError(await api.patch('/1.0', { config: { 'core.debug_address': `127.0.0.1:${port}` } }), 400);
      assert.match(msg, /Cannot listen.*core\.debug_address/);
    } finally {
      busy.close();
    }
    assert.equal((await config())['core.debug_address'], undefined);
  });

  test('set: live figures, a CPU profile and a heap snapshot; moved; unset closes it', async () => {
    const port = await freePort();
    assert.equal((await api.patch('/1.0', { config: { 'core.debug_address': `127.0.0.1:${port}` } })).status, 200);
    assert.equal((await config())['core.debug_address'], `127.0.0.1:${port}`);

    const index = await get(port, '/debug/pprof/');
    assert.equal(index.status, 200);
    assert.match(index.body.toString(), /\/debug\/pprof\/heap/);

    const vars = JSON.parse((await get(port, '/debug/vars')).body.toString());
    assert.equal(vars.pid, d.proc.pid, "the daemon's own figures");
    assert.ok(vars.memory.rss > 10 * 1024 * 1024 && vars.memory.heapUsed > 0, 'memory figures');
    assert.ok(vars.active_resources.total > 0);
    assert.ok(vars.event_loop_delay_ms && vars.event_loop_delay_ms.max >= 0, 'event loop delay measured');

    const profile = await get(port, '/debug/pprof/profile?seconds=1');
    assert.equal(profile.status, 200);
    const p = JSON.parse(profile.body.toString());
    assert.ok(Array.isArray(p.nodes) && p.nodes.length > 0 && Array.isArray(p.samples), 'a .cpuprofile');
    assert.ok(p.endTime - p.startTime >= 900_000, 'about one second (µs)');
    assert.equal((await get(port, '/debug/pprof/profile?seconds=0')).status, 400);

    const heap = await get(port, '/debug/pprof/heap', 64);
    assert.equal(heap.status, 200);
    assert.match(heap.body.toString(), /^\{"snapshot":/);

    const moved = await freePort();
    assert.equal((await api.patch('/1.0', { config: { 'core.debug_address': `127.0.0.1:${moved}` } })).status, 200);
    assert.equal((await get(moved, '/debug/vars')).status, 200);
    assert.equal(await refused(port), true, 'the old address is closed');

    assert.equal((await api.patch('/1.0', { config: { 'core.debug_address': '' } })).status, 200);
    assert.equal(await refused(moved), true, 'unset closes it');
    assert.equal((await config())['core.debug_address'], undefined);
  });

  test('kept across a restart of the daemon', async () => {
    const port = await freePort();
    assert.equal((await api.patch('/1.0', { config: { 'core.debug_address': `127.0.0.1:${port}` } })).status, 200);
    await d.stop();
    assert.equal(await refused(port), true);
    await d.restart();
    assert.equal((await get(port, '/debug/vars')).status, 200);
  });
});
