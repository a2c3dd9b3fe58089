import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { getRequestListener } from '@hono/node-server';
import { Hono } from 'hono';
import { requestSignal } from './request-signal.ts';

/** A node server on 127.0.0.1 with one route that waits until its request's signal aborts, or answers at once. */
async function serve() {
  const aborted: string[] = [];
  let entered!: () => void;
  const waiting = new Promise<void>((r) => (entered = r));
  const app = new Hono();
  app.get('/wait', async (c) => {
    const signal = requestSignal(c);
    entered();
    await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
    aborted.push(String((signal.reason as Error).message));
    return c.text('late');
  });
  app.get('/now', (c) => {
    const signal = requestSignal(c);
    setTimeout(() => aborted.push(signal.aborted ? 'aborted after the answer' : 'not aborted'), 50);
    return c.text('ok');
  });
  const server = http.createServer(getRequestListener(app.fetch));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, port: (server.address() as AddressInfo).port, aborted, waiting };
}

test('a client that goes away before its answer aborts the signal; an answered request never does', async () => {
  const s = await serve();
  try {
    const req = http.get({ host: '127.0.0.1', port: s.port, path: '/wait' });
    req.on('error', () => {});
    await s.waiting;
    req.destroy();
    for (let i = 0; i < 100 && s.aborted.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    assert.deepEqual(s.aborted, ['Client connection prematurely closed.']);

    s.aborted.length = 0;
    const body = await new Promise<string>((resolve, reject) => {
      http
        .get({ host: '127.0.0.1', port: s.port, path: '/now', agent: false }, (res) => {
          let t = '';
          res.on('data', (d) => (t += d)).on('end', () => resolve(t));
        })
        .on('error', reject);
    });
    assert.equal(body, 'ok');
    await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(s.aborted, ['not aborted'], 'the connection closing after the answer aborts nothing');
  } finally {
    s.server.closeAllConnections();
    await new Promise((r) => s.server.close(r));
  }
});
