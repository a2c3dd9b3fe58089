import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { performance } from 'node:perf_hooks';
import tls from 'node:tls';
import { makeClientCertificate } from '../support/certs.ts';
import { startDaemon, type Daemon } from '../support/daemon.ts';
import { freePort, client, type Client } from '../support/http.ts';

/**
 * A hundred client connections that open and send nothing, plus a hundred that send one byte of a
 * request line per second, on the unix socket and on the HTTPS listener, do not delay any other
 * client. Only the unix socket and 127.0.0.1 are used.
 */

const SLOW = 100;
const SAMPLES = 50;
const P95_LIMIT_MS = 200;
const TRICKLE_SECONDS = 5;
const REQUEST_LINE = 'GET /1.0 HTTP/1.1\r\nHost: svcd\r\n\r\n';

interface Slow {
  socket: net.Socket;
  kind: string;
  closedEarly: boolean;
  received: number;
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))]!;
}

/** `n` sequential GET /1.0: every one must be a 200 sync answer; returns the latencies (ms), sorted. */
async function measure(api: Client, n: number, auth: string): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    let timer: NodeJS.Timeout | undefined;
    // A client held up behind the slow ones fails here rather than hanging the file.
    const res = await Promise.race([
      api.get('/1.0'),
      new Promise<never>(
        (_, reject) => (timer = setTimeout(() => reject(new Error(`request ${i} got no answer within 5 s`)), 5_000)),
      ),
    ]).finally(() => clearTimeout(timer));
    times.push(performance.now() - t0);
    assert.equal(res.status, 200, `request ${i}: ${res.text.slice(0, 200)}`);
    assert.equal(res.json.type, 'sync');
    assert.equal(res.json.metadata.auth, auth);
  }
  return times.sort((a, b) => a - b);
}

const summary = (sorted: number[]) =>
  `median ${percentile(sorted, 0.5).toFixed(1)} ms, p95 ${percentile(sorted, 0.95).toFixed(1)} ms, max ${sorted[sorted.length - 1]!.toFixed(1)} ms`;

describe('slow and silent clients do not delay other clients', () => {
  let d: Daemon;
  let local: Client;
  let remote: Client;
  let port: number;
  const slow: Slow[] = [];
  let trickle: NodeJS.Timeout | undefined;

  /** Open one slow connection and wait until it is established (TLS: handshake done). */
  function open(kind: 'unix' | 'tcp' | 'tls'): Promise<Slow> {
    return new Promise((resolve, reject) => {
      const socket =
        kind === 'unix'
          ? net.connect(d.socketPath)
          : kind === 'tcp'
            ? net.connect({ host: '127.0.0.1', port })
            : tls.connect({ host: '127.0.0.1', port, rejectUnauthorized: false });
      const s: Slow = { socket, kind, closedEarly: false, received: 0 };
      slow.push(s);
      socket.on('data', (b: Buffer) => (s.received += b.length));
      socket.on('close', () => (s.closedEarly = true));
      socket.once('error', (e) => reject(new Error(`${kind} slow connection: ${e.message}`)));
      socket.once(kind === 'tls' ? 'secureConnect' : 'connect', () => {
        socket.on('error', () => {});
        resolve(s);
      });
    });
  }

  before(async () => {
    d = await startDaemon();
    local = client({ socketPath: d.socketPath });
    port = await freePort();
    const admin = await makeClientCertificate('admin');
    const r = await local.patch('/1.0', { config: { 'core.https_address': `127.0.0.1:${port}` } });
    assert.equal(r.status, 200, r.text);
    assert.equal(
      (await local.post('/1.0/certificates', { type: 'client', certificate: admin.cert, name: 'admin' })).status,
      200,
    );
    remote = client({ https: { host: '127.0.0.1', port, ...admin } });
    assert.equal((await remote.get('/1.0')).json.metadata.auth, 'trusted');
  });

  after(async () => {
    if (trickle) clearInterval(trickle);
    for (const s of slow) s.socket.destroy();
    await d?.destroy();
  });

  test('baseline: GET /1.0 on both listeners with no slow clients', async (t) => {
    const u = await measure(local, 20, 'trusted');
    const h = await measure(remote, 20, 'trusted');
    t.diagnostic(`baseline unix: ${summary(u)}`);
    t.diagnostic(`baseline https: ${summary(h)}`);
  });

  test(`${SLOW} silent + ${SLOW} trickling connections per listener: ${SAMPLES} sequential GET /1.0 on each listener all succeed, p95 < ${P95_LIMIT_MS} ms`, async (t) => {
    // Silent: the unix socket, and on the HTTPS port half raw TCP (no TLS handshake at all), half
    // TLS connections that completed the handshake and then say nothing.
    const silent = await Promise.all([
      ...Array.from({ length: SLOW }, () => open('unix')),
      ...Array.from({ length: SLOW / 2 }, () => open('tcp')),
      ...Array.from({ length: SLOW / 2 }, () => open('tls')),
    ]);
    // Trickling: one byte of a request line per second, bounded to TRICKLE_SECONDS.
    const trickling = await Promise.all([
      ...Array.from({ length: SLOW }, () => open('unix')),
      ...Array.from({ length: SLOW }, () => open('tls')),
    ]);
    assert.equal(silent.length + trickling.length, 4 * SLOW);
    let sent = 0;
    const tick = () => {
      if (sent >= TRICKLE_SECONDS) return;
      for (const s of trickling) if (!s.socket.destroyed) s.socket.write(REQUEST_LINE[sent]!);
      sent++;
    };
    tick();
    trickle = setInterval(tick, 1000);
    const started = performance.now();

    // While all of them are open and the trickle goes on, a normal client on each listener: the
    // samples are spread over the trickle, one batch per second.
    const u: number[] = [];
    const h: number[] = [];
    for (let round = 0; round < TRICKLE_SECONDS; round++) {
      const roundStart = performance.now();
      u.push(...(await measure(local, SAMPLES / TRICKLE_SECONDS, 'trusted')));
      h.push(...(await measure(remote, SAMPLES / TRICKLE_SECONDS, 'trusted')));
      const left = 1000 - (performance.now() - roundStart);
      if (round < TRICKLE_SECONDS - 1 && left > 0) await new Promise((r) => setTimeout(r, left));
    }
    u.sort((a, b) => a - b);
    h.sort((a, b) => a - b);
    assert.equal(u.length, SAMPLES);
    assert.equal(h.length, SAMPLES);
    const measuredFor = performance.now() - started;
    assert.ok(sent >= TRICKLE_SECONDS - 1, `the measurement overlapped the trickle (${sent} bytes sent)`);
    t.diagnostic(`unix with ${4 * SLOW} slow connections open: ${summary(u)}`);
    t.diagnostic(`https with ${4 * SLOW} slow connections open: ${summary(h)}`);
    t.diagnostic(`measured for ${measuredFor.toFixed(0)} ms while ${sent} byte(s) were trickled`);

    // Let the trickle run its course (bounded), then check the slow connections were served
    // nothing (their request is incomplete) and were not cut: the daemon gives them 30 s.
    await new Promise<void>((resolve) => {
      const wait = () => (sent >= TRICKLE_SECONDS ? resolve() : setTimeout(wait, 100));
      wait();
    });
    clearInterval(trickle);
    trickle = undefined;
    const cut = slow.filter((s) => s.closedEarly).map((s) => s.kind);
    assert.deepEqual(cut, [], 'no slow connection was closed within the 30 s header timeout');
    assert.equal(
      slow.reduce((n, s) => n + s.received, 0),
      0,
      'an incomplete request gets no answer',
    );

    assert.ok(percentile(u, 0.95) < P95_LIMIT_MS, `unix p95 ${percentile(u, 0.95).toFixed(1)} ms`);
    assert.ok(percentile(h, 0.95) < P95_LIMIT_MS, `https p95 ${percentile(h, 0.95).toFixed(1)} ms`);
  });

  test('once the slow connections close, the daemon is healthy on both listeners', async () => {
    assert.ok(slow.length >= 4 * SLOW, 'the previous test opened the slow connections');
    await Promise.all(
      slow.map(
        (s) =>
          new Promise<void>((resolve) => {
            if (s.socket.destroyed) return resolve();
            s.socket.once('close', () => resolve());
            s.socket.destroy();
          }),
      ),
    );
    assert.equal(d.proc.exitCode, null, 'the daemon is still running');
    assert.equal(d.proc.signalCode, null);
    const u = await measure(local, 10, 'trusted');
    const h = await measure(remote, 10, 'trusted');
    assert.ok(
      percentile(u, 0.95) < P95_LIMIT_MS && percentile(h, 0.95) < P95_LIMIT_MS,
      `${summary(u)} / ${summary(h)}`,
    );
    // A complete request sent slowly is still answered correctly after all that.
    const res = await new Promise<string>((resolve, reject) => {
      const s = net.connect(d.socketPath);
      let out = '';
      s.on('data', (b: Buffer) => (out += b.toString()));
      s.on('close', () => resolve(out));
      s.on('error', reject);
      s.write(REQUEST_LINE.slice(0, 10));
      setTimeout(() => s.end(REQUEST_LINE.slice(10).replace('\r\n\r\n', '\r\nConnection: close\r\n\r\n')), 200);
      setTimeout(() => (s.destroy(), reject(new Error(`no answer: ${out}`))), 10_000).unref();
    });
    assert.match(res, /^HTTP\/1\.1 200 /);
    assert.equal(JSON.parse(res.slice(res.indexOf('\r\n\r\n') + 4)).metadata.auth, 'trusted');
    const errors = d
      .output()
      .split('\n')
      .filter((l) => /"level":(50|60)/.test(l));
    assert.deepEqual(errors, [], 'no errors logged');
  });
});
