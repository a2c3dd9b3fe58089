import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { after, test } from 'node:test';
import { WebSocket, WebSocketServer } from 'ws';
import { ControlChannel, FsChannel } from './ws-frames.ts';

const server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
await once(server, 'listening');
const port = (server.address() as { port: number }).port;
after(() => server.close());

/** A connected websocket pair on loopback: [client side, server side]. */
async function socketPair(): Promise<[WebSocket, WebSocket]> {
  const accepted = once(server, 'connection') as Promise<[WebSocket]>;
  const client = new WebSocket(`ws://127.0.0.1:${port}/`);
  await once(client, 'open');
  const [peer] = await accepted;
  return [client, peer];
}

async function readAll(s: NodeJS.ReadableStream): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const c of s) parts.push(c as Buffer);
  return Buffer.concat(parts);
}

test('bytes cross in order both ways, each side ends at the other side’s barrier, sessions follow on one socket', async () => {
  const [a, b] = await socketPair();
  const fa = new FsChannel(a);
  const fb = new FsChannel(b);
  const sa = fa.session();
  const sb = fb.session();
  // the barrier is what b sees: an empty text message after a's data
  const raw: Array<[number, boolean]> = [];
  b.on('message', (d, isBinary) => raw.push([(d as Buffer).length, isBinary]));
  sa.end(Buffer.from('hello '));
  sb.end(Buffer.from('world'));
  assert.equal((await readAll(sb)).toString(), 'hello ');
  assert.equal((await readAll(sa)).toString(), 'world');
  assert.deepEqual(raw, [
    [6, true],
    [0, false],
  ]);
  // the peer starts its next stream before this side opens its next session: nothing is lost
  const early = fb.session();
  early.end(Buffer.from('second'));
  await new Promise((r) => setTimeout(r, 50));
  const next = fa.session();
  next.end();
  assert.equal((await readAll(next)).toString(), 'second');
  await readAll(early);
  a.close();
});

test('a slow consumer holds the sender back, then gets every byte', async () => {
  const [a, b] = await socketPair();
  const total = 64 * 1024 * 1024;
  const chunk = Buffer.alloc(64 * 1024, 7);
  let produced = 0;
  const source = new Readable({
    read() {
      if (produced >= total) return void this.push(null);
      produced += chunk.length;
      this.push(chunk);
    },
  });
  const sending = pipeline(source, new FsChannel(a).session());
  const receiving = new FsChannel(b).session();
  await new Promise((r) => setTimeout(r, 400));
  // nothing read yet: the queue, ws and loopback's socket buffers hold a few MiB, not the whole stream
  assert.ok(produced < total / 2, `sender produced ${produced} of ${total} bytes with nobody reading`);
  const hash = createHash('sha256');
  let got = 0;
  for await (const c of receiving) {
    hash.update(c as Buffer);
    got += (c as Buffer).length;
  }
  await sending;
  assert.equal(got, total);
  assert.equal(hash.digest('hex'), createHash('sha256').update(Buffer.alloc(total, 7)).digest('hex'));
  a.close();
});

test('a socket closed mid-stream ends the session; writing after it fails', async () => {
  const [a, b] = await socketPair();
  const sb = new FsChannel(b).session();
  const sa = new FsChannel(a).session();
  sa.write(Buffer.from('partial'));
  await new Promise((r) => setTimeout(r, 50));
  a.terminate();
  assert.equal((await readAll(sb)).toString(), 'partial');
  sa.on('error', () => {});
  await assert.rejects(
    new Promise<void>((resolve, reject) => sa.write(Buffer.from('x'), (e) => (e ? reject(e) : resolve()))),
    /closed/,
  );
});

test('control messages: one binary websocket message each; text there is an error', async () => {
  const [a, b] = await socketPair();
  const ca = new ControlChannel(a);
  const cb = new ControlChannel(b);
  const raw: boolean[] = [];
  b.on('message', (_d, isBinary) => raw.push(isBinary));
  await ca.send(Buffer.from('0800', 'hex'));
  await ca.send(Buffer.from('08011200', 'hex'));
  assert.equal((await cb.receive()).toString('hex'), '0800');
  assert.equal((await cb.receive()).toString('hex'), '08011200');
  assert.deepEqual(raw, [true, true]);
  a.send('oops');
  await assert.rejects(cb.receive(), /text message on the control channel/);
  a.close();
  await assert.rejects(ca.receive(), /closed the control channel/);
});

test('one-way streams: the sender barriers each, the receiver sends nothing back; a close before the barrier fails it', async () => {
  const [a, b] = await socketPair();
  const fa = new FsChannel(a);
  const fb = new FsChannel(b);
  const back: number[] = [];
  a.on('message', (d) => back.push((d as Buffer).length));
  for (const text of ['{"subvolumes":[]}', 'stream one']) {
    const out = fa.outbound();
    out.end(Buffer.from(text));
    assert.equal((await readAll(fb.inbound())).toString(), text);
  }
  await new Promise((r) => setTimeout(r, 50));
  assert.deepEqual(back, [], 'nothing came back to the sender');
  // cut: no barrier came, so the stream is not whole even though the socket closed cleanly
  const cut = fb.inbound();
  const half = fa.outbound();
  const halfFailed = new Promise<Error>((r) => half.once('error', r));
  half.write(Buffer.from('half'));
  await new Promise((r) => setTimeout(r, 50));
  a.close(1000);
  await assert.rejects(readAll(cut), /hung up before the end of the stream/);
  // and the sender's unfinished stream fails too: its socket is gone
  assert.match((await halfFailed).message, /websocket is closed/);
});
