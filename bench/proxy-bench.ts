/**
 * Proxy-device benchmark for any server speaking the LXD-style REST API on a unix socket (svcd, or LXD
 * for comparison). A script run by hand that prints figures; it asserts nothing. It must run in the
 * daemon's network namespace with loopback up (bench/compare.sh --proxy runs it with nsenter there), since
 * the proxies listen on 127.0.0.1 of that namespace.
 *
 *   node --import tsx bench/proxy-bench.ts --socket <path> --image-file <unified tarball>
 *        [--connections 200] [--concurrent 100] [--mib 256] [--adds 40] [--label NAME] [--json <out.json>]
 *
 * Workload: one container running busybox httpd (127.0.0.1:80, a 1 KiB page) and a `nc` sink
 * (127.0.0.1:9000, to /dev/null), both inside it;
 *  1. adding a proxy device (listen tcp:127.0.0.1:<port> → connect tcp:127.0.0.1:80) to the running
 *     container, `--adds` times (each removed again): the time of the PATCH, and until the port answers
 *     (40 by default: the median is then the daemon's steady state, not its first calls, which pay for the
 *     JIT, for statements met for the first time and, on svcd, for database connections opened on demand);
 *  2. `--connections` sequential HTTP GETs through it, a new connection each: connect to the last byte;
 *  3. `--concurrent` GETs at once: failures;
 *  4. `--mib` MiB sent host → container through a second proxy to the sink, three times: the median throughput.
 */
import { createConnection } from 'node:net';
import { writeFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { uploadImageFile } from './lib/image-upload.ts';
import { fmtMs, summarize, table, type LatencyStats } from './lib/stats.ts';
import { errorText, UnixClient } from './lib/unix-client.ts';

const { values: opts } = parseArgs({
  options: {
    socket: { type: 'string' },
    'image-file': { type: 'string' },
    connections: { type: 'string', default: '200' },
    concurrent: { type: 'string', default: '100' },
    mib: { type: 'string', default: '256' },
    adds: { type: 'string', default: '40' },
    label: { type: 'string', default: 'server' },
    json: { type: 'string' },
  },
  strict: true,
});
if (!opts.socket || !opts['image-file']) {
  process.stderr.write(
    'usage: proxy-bench.ts --socket <path> --image-file <tarball> [--connections N] [--concurrent N] [--mib N] [--adds N] [--label L] [--json F]\n',
  );
  process.exit(2);
}
const CT = 'pbench';
const ALIAS = 'bench-proxy-busybox';
const OP_MS = 120_000;
const WEB_PORT = 18080;
const SINK_PORT = 19000;
const client = new UnixClient(opts.socket);
const log = (s: string) => process.stdout.write(`${s}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface ProxyBenchResults {
  label: string;
  add?: LatencyStats;
  addUntilAnswer?: LatencyStats;
  request?: LatencyStats;
  concurrent?: { n: number; failed: number; wallMs: number };
  throughput?: { mib: number; ms: number; mibPerS: number };
  errors: string[];
}
const results: ProxyBenchResults = { label: opts.label, errors: [] };

/** A request that may answer 200 (sync) or 202 (an operation, waited for). */
async function change(method: string, path: string, body: unknown): Promise<number> {
  const t0 = performance.now();
  const r = await client.request(method, path, body);
  if (r.status === 200) return performance.now() - t0;
  if (r.status !== 202) throw new Error(`${method} ${path}: HTTP ${r.status} ${errorText(r)}`);
  const op = await client.waitOperation(String(r.json?.operation || r.headers.location), Date.now() + OP_MS);
  if (Number(op?.status_code) !== 200) throw new Error(`${method} ${path}: ${op?.err ?? 'operation failed'}`);
  return performance.now() - t0;
}
const proxy = (listen: number, connect: number) => ({
  type: 'proxy',
  listen: `tcp:127.0.0.1:${listen}`,
  connect: `tcp:127.0.0.1:${connect}`,
});
const setDevices = async (extra: Record<string, Record<string, string>>) => {
  const cur = (await client.get(`/1.0/containers/${CT}`)).json?.metadata as {
    devices: Record<string, Record<string, string>>;
  };
  const devices = Object.fromEntries(Object.entries(cur.devices).filter(([, d]) => d.type !== 'proxy'));
  return change('PATCH', `/1.0/containers/${CT}`, { devices: { ...devices, ...extra } });
};
/** Run a command in the container without waiting for its output. */
const exec = (command: string[]) =>
  change('POST', `/1.0/containers/${CT}/exec`, {
    command,
    'wait-for-websocket': false,
    interactive: false,
    'record-output': false,
    environment: {},
  });

/** One HTTP GET over a new connection: ms from connect to the end of the reply, or an Error. */
function httpGet(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    let got = '';
    const s = createConnection({ host: '127.0.0.1', port }, () =>
      s.write('GET /index.html HTTP/1.0\r\nHost: x\r\n\r\n'),
    );
    s.setTimeout(10_000, () => s.destroy(new Error('timeout')));
    s.on('data', (b) => (got += b.toString('latin1')));
    s.on('error', reject);
    s.on('close', () =>
      /^HTTP\/1\.[01] 200/.test(got) && got.length > 1024
        ? resolve(performance.now() - t0)
        : reject(new Error(`bad reply: ${got.slice(0, 60)}`)),
    );
  });
}
async function answers(port: number, deadlineMs: number): Promise<boolean> {
  const end = performance.now() + deadlineMs;
  while (performance.now() < end) {
    if (
      await httpGet(port).then(
        () => true,
        () => false,
      )
    )
      return true;
    await sleep(5);
  }
  return false;
}

/** Send `mib` MiB to the sink through the proxy; ms until the connection closed (the sink saw EOF). */
function send(port: number, mib: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const chunk = Buffer.alloc(1 << 20, 0x61);
    let left = mib;
    const s = createConnection({ host: '127.0.0.1', port });
    const t0 = performance.now();
    const pump = () => {
      while (left > 0) {
        left--;
        if (!s.write(chunk)) return void s.once('drain', pump);
      }
      s.end();
    };
    s.on('connect', pump);
    s.on('error', reject);
    s.resume();
    s.on('close', () => resolve(performance.now() - t0));
  });
}

async function main(): Promise<void> {
  const up = await uploadImageFile(client, opts['image-file']!, ALIAS, OP_MS);
  try {
    await change('POST', '/1.0/containers', { name: CT, source: { type: 'image', alias: ALIAS } });
    await change('PUT', `/1.0/containers/${CT}/state`, { action: 'start', timeout: -1 });
    await exec([
      'sh',
      '-c',
      'ip link set lo up; mkdir -p /srv && head -c 4096 /dev/zero | tr "\\0" x > /srv/index.html && busybox httpd -p 127.0.0.1:80 -h /srv',
    ]);

    const add: number[] = [];
    const ready: number[] = [];
    for (let i = 0; i < Number(opts.adds); i++) {
      const t0 = performance.now();
      add.push(await setDevices({ web: proxy(WEB_PORT, 80) }));
      if (await answers(WEB_PORT, 10_000)) ready.push(performance.now() - t0);
      else results.errors.push(`add ${i}: the proxy did not answer within 10 s`);
      if (i < Number(opts.adds) - 1) await setDevices({});
    }
    results.add = summarize(add);
    results.addUntilAnswer = summarize(ready);
    log(
      `${opts.label}: add a proxy to a running container ${fmtMs(results.add.median)} (answering after ${fmtMs(results.addUntilAnswer.median)}) (medians)`,
    );

    const req: number[] = [];
    for (let i = 0; i < Number(opts.connections); i++) {
      try {
        req.push(await httpGet(WEB_PORT));
      } catch (e) {
        results.errors.push(`request ${i}: ${(e as Error).message}`);
      }
    }
    results.request = summarize(req);
    log(
      `${opts.connections} sequential GETs through the proxy: median ${fmtMs(results.request.median)}, p95 ${fmtMs(results.request.p95)}`,
    );

    const n = Number(opts.concurrent);
    const t0 = performance.now();
    const all = await Promise.allSettled(Array.from({ length: n }, () => httpGet(WEB_PORT)));
    results.concurrent = {
      n,
      failed: all.filter((r) => r.status === 'rejected').length,
      wallMs: performance.now() - t0,
    };
    log(`${n} GETs at once: ${results.concurrent.failed} failed, ${fmtMs(results.concurrent.wallMs)}`);

    await setDevices({ web: proxy(WEB_PORT, 80), sink: proxy(SINK_PORT, 9000) });
    // busybox nc closes on its own stdin's EOF: the sink reads the socket with cat instead (-e).
    // One transfer swings by ±25% on 2 shared cores: the median of three, a fresh sink for each.
    await exec(['sh', '-c', 'printf "#!/bin/sh\\nexec cat >/dev/null\\n" >/srv/sink && chmod +x /srv/sink']);
    const mib = Number(opts.mib);
    const runs: number[] = [];
    for (let i = 0; i < 3; i++) {
      await exec(['sh', '-c', 'setsid busybox nc -l -p 9000 -e /srv/sink </dev/null >/dev/null 2>&1 &']);
      await sleep(300);
      runs.push(await send(SINK_PORT, mib));
    }
    const ms = runs.sort((a, b) => a - b)[1]!;
    results.throughput = { mib, ms, mibPerS: (mib * 1000) / ms };
    log(`${mib} MiB host → container through the proxy: ${fmtMs(ms)} (${results.throughput.mibPerS.toFixed(0)} MiB/s)`);
  } catch (e) {
    results.errors.push(String((e as Error).message ?? e));
    log(`error: ${(e as Error).message}`);
  } finally {
    await change('PUT', `/1.0/containers/${CT}/state`, { action: 'stop', force: true, timeout: -1 }).catch(
      () => undefined,
    );
    await change('DELETE', `/1.0/containers/${CT}`, undefined).catch(() => undefined);
    await client.request('DELETE', `/1.0/images/aliases/${ALIAS}`).catch(() => undefined);
    if (up.imported)
      await client.operation('DELETE', `/1.0/images/${up.fingerprint}`, undefined, 60_000).catch(() => undefined);
    client.close();
  }
  if (opts.json) await writeFile(opts.json, JSON.stringify(results, null, 2));
  log(
    table([
      ['', opts.label],
      ['add a proxy to a running container (median)', fmtMs(results.add?.median)],
      ['  … until it answers (median)', fmtMs(results.addUntilAnswer?.median)],
      ['GET through the proxy, new connection (median)', fmtMs(results.request?.median)],
      [`${results.concurrent?.n ?? '-'} at once: failed`, String(results.concurrent?.failed ?? '-')],
      [
        `${results.throughput?.mib ?? '-'} MiB host → container`,
        results.throughput ? `${results.throughput.mibPerS.toFixed(0)} MiB/s` : '—',
      ],
    ]),
  );
  if (results.errors.length) log(`errors: ${results.errors.slice(0, 5).join('; ')}`);
}

await main();
