import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { getRequestListener } from '@hono/node-server';
import { Hono } from 'hono';
import * as v from 'valibot';
import { discardUnreadBody, MAX_JSON_BODY, readJson } from './body.ts';
import { HttpError } from './errors.ts';

/**
 * Bodies read from node's request (src/api/body.ts) on a real node server, with the app's error path (the
 * body is drained before the answer, or the connection is closed: app.ts). Each request records how many
 * bytes its connection had read when it was answered.
 */
async function serve() {
  const readAtAnswer: number[] = [];
  const app = new Hono();
  app.post('/json', async (c) => c.json(await readJson(c, v.object({ name: v.string() }))));
  app.onError(async (err, c) => {
    if (!(await discardUnreadBody(c))) c.header('Connection', 'close');
    for (const [k, val] of Object.entries(err instanceof HttpError ? err.headers : {})) c.header(k, val);
    readAtAnswer.push((c.env as { incoming: http.IncomingMessage }).incoming.socket.bytesRead);
    return c.json({ error: err.message }, err instanceof HttpError ? (err.status as 400) : 500);
  });
  const server = http.createServer(getRequestListener(app.fetch));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, port: (server.address() as AddressInfo).port, readAtAnswer };
}

/** POST `size` bytes (chunked, in 1 MiB writes; keep-alive asked for) and resolve with the answer, or with what cut the connection. */
function post(
  port: number,
  body: Buffer | number,
): Promise<{ status?: number; connection?: string; text?: string; cut?: string }> {
  return new Promise((resolve) => {
    const agent = new http.Agent({ keepAlive: true });
    const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: '/json', agent }, (res) => {
      let text = '';
      res
        .on('data', (d) => (text += d))
        .on(
          'end',
          () => (
            agent.destroy(), resolve({ status: res.statusCode!, connection: String(res.headers.connection), text })
          ),
        );
    });
    req.on('error', (e) => (agent.destroy(), resolve({ cut: e.message })));
    if (Buffer.isBuffer(body)) return void req.end(body);
    const chunk = Buffer.alloc(1 << 20, 0x20);
    let left = Math.ceil(body / chunk.length);
    const pump = () => {
      while (left > 0) {
        left--;
        if (!req.write(chunk)) return void req.once('drain', pump);
      }
      req.end();
    };
    pump();
  });
}

test('a JSON body is read from the node request; one too large is refused, drained up to 64 MiB more, else answered with Connection: close and read no further', async () => {
  const s = await serve();
  try {
    const ok = await post(s.port, Buffer.from(JSON.stringify({ name: 'a' })));
    assert.deepEqual([ok.status, JSON.parse(ok.text!)], [200, { name: 'a' }]);

    const over = await post(s.port, MAX_JSON_BODY + (8 << 20));
    assert.equal(over.status, 400);
    assert.match(over.text!, /too large/);
    assert.notEqual(over.connection, 'close', 'drained: the connection stays usable');

    const huge = await post(s.port, MAX_JSON_BODY + (100 << 20));
    if (huge.status !== undefined) {
      assert.equal(huge.status, 400);
      assert.equal(huge.connection, 'close');
    }
    const read = s.readAtAnswer.at(-1)!;
    // What it read: the 4 MiB limit, then at most 64 MiB of draining (plus what the socket had buffered), never
    // the 100 MiB more that a second drain in the error path would read.
    assert.ok(read < MAX_JSON_BODY + (64 << 20) + (16 << 20), `read ${read} bytes before answering`);
  } finally {
    s.server.closeAllConnections();
    await new Promise((r) => s.server.close(r));
  }
});
