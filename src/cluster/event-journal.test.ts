import assert from 'node:assert/strict';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { WebSocketServer, type WebSocket } from 'ws';
import { createEventBus, type EventBus, type SvcEvent } from '../events/index.ts';
import { generateCertificate } from '../tls/ensure-server-certificate.ts';
import { fingerprintOfPem } from './cluster-certificate.ts';
import { createEventJournal, type EventJournal } from './event-journal.ts';
import { createEventRelay } from './event-relay.ts';

/** Member a's HTTPS listener with its journal (swapped for a new one to play a restart), member b's relay and bus. */
let cert: { cert: string; key: string; fingerprint: string };
let server: https.Server;
let address = '';
let journal: EventJournal;
let busA: EventBus;
const sockets = new Set<WebSocket>();
const quiet = { info() {}, warn() {} };

function restartA() {
  busA = createEventBus({ location: 'a' });
  journal = createEventJournal({ bus: busA, node: 'a' });
}

before(async () => {
  cert = { ...(await generateCertificate('cluster', { serverAuth: true })), fingerprint: '' };
  cert.fingerprint = fingerprintOfPem(cert.cert);
  restartA();
  const wss = new WebSocketServer({ noServer: true });
  server = https.createServer({ cert: cert.cert, key: cert.key, requestCert: true, rejectUnauthorized: false });
  server.on('upgrade', (req, socket, head) => {
    const served = journal.serve(req, new URL(req.url ?? '/', 'http://a'), cert.fingerprint);
    if (typeof served === 'string') return socket.end('HTTP/1.1 403 Forbidden\r\n\r\n');
    wss.handleUpgrade(req, socket, head, (ws) => {
      sockets.add(ws);
      ws.on('close', () => sockets.delete(ws));
      served(ws);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  address = `127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(() => server.close());

const lifecycle = (action: string) => ({ type: 'lifecycle' as const, metadata: { action } });

async function until(what: string, ok: () => boolean) {
  for (let i = 0; i < 200 && !ok(); i++) await new Promise((r) => setTimeout(r, 20));
  assert.ok(ok(), what);
}

test('a member that lost the connection replays what it missed, once each, in order; after a restart, all the new process kept', async () => {
  const busB = createEventBus({ location: 'b' });
  const seen: string[] = [];
  busB.subscribe({ types: new Set(['lifecycle']) }, (e: SvcEvent) =>
    seen.push(`${e.location}:${String(e.metadata.action)}`),
  );
  const relay = createEventRelay({
    node: 'b',
    bus: busB,
    log: quiet,
    checkMs: 60_000,
    cluster: {
      certificate: () => cert,
      members: async () => [{ name: 'a', address, online: true }] as never,
    },
  });
  const member = { name: 'a', address };
  await relay.ensure(member);
  busA.publish(lifecycle('one'));
  await until('the live event relayed', () => seen.length === 1);

  // The connection cut: what a emits meanwhile reaches nobody, until b reconnects.
  for (const ws of sockets) ws.terminate();
  await until('the connection gone', () => sockets.size === 0);
  await new Promise((r) => setTimeout(r, 50));
  busA.publish(lifecycle('two'));
  busA.publish(lifecycle('three'));
  // What b relays itself is never sent back.
  busA.publish({ ...lifecycle('relayed'), location: 'c' });
  assert.deepEqual(seen, ['a:one']);
  await relay.ensure(member);
  busA.publish(lifecycle('four'));
  await until('replayed, then live', () => seen.length === 4);
  assert.deepEqual(seen, ['a:one', 'a:two', 'a:three', 'a:four']);

  // a restarted (a new journal): what its new process emitted before b was back is replayed.
  for (const ws of sockets) ws.terminate();
  await until('the connection gone', () => sockets.size === 0);
  await new Promise((r) => setTimeout(r, 50));
  restartA();
  busA.publish(lifecycle('booted'));
  await relay.ensure(member);
  await until('the new process replayed', () => seen.length === 5);
  assert.deepEqual(seen.slice(4), ['a:booted']);
  relay.stop();
});

test("only the cluster certificate may follow a member's journal", async () => {
  const other = await generateCertificate('intruder', { serverAuth: false });
  const status = await new Promise<number>((resolve, reject) => {
    const req = https.request({
      host: '127.0.0.1',
      port: Number(address.split(':')[1]),
      path: '/internal/cluster/events',
      cert: other.cert,
      key: other.key,
      rejectUnauthorized: false,
      headers: {
        connection: 'Upgrade',
        upgrade: 'websocket',
        'sec-websocket-version': '13',
        'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
      },
    });
    req.on('response', (res) => resolve(res.statusCode ?? 0));
    req.on('upgrade', () => resolve(101));
    req.on('error', reject);
    req.end();
  });
  assert.equal(status, 403);
});
