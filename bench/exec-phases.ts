/**
 * Where an exec with websockets spends its time, phase by phase, against any server speaking this
 * API on a unix socket (svcd, or lxd for comparison), on a running container the caller names:
 *
 *   node --import tsx bench/exec-phases.ts --socket <path> --container <name> [--rounds 40] [--command true]
 *
 * Each round does what `lxc exec` does (POST with wait-for-websocket, connect control, 0, 1, 2 one after
 * the other, stdin EOF, wait for the operation and for the output sockets to close) and times: the POST,
 * each handshake, the wait after the last handshake, the closes after the wait, and the whole. Prints the
 * median of each phase. Only the unix socket is contacted.
 */
import { parseArgs } from 'node:util';
import { WebSocket } from 'ws';
import { summarize, table, fmtMs } from './lib/stats.ts';
import { errorText, UnixClient } from './lib/unix-client.ts';

const { values: opts } = parseArgs({
  options: {
    socket: { type: 'string' },
    container: { type: 'string' },
    rounds: { type: 'string', default: '40' },
    command: { type: 'string', default: 'true' },
  },
});
if (!opts.socket || !opts.container) {
  process.stderr.write(
    'usage: node --import tsx bench/exec-phases.ts --socket <path> --container <name> [--rounds 40] [--command true]\n',
  );
  process.exit(2);
}
const socket = opts.socket;
const container = opts.container;
const command = opts.command ?? 'true';
const rounds = Number(opts.rounds);
if (!Number.isInteger(rounds) || rounds < 1) {
  process.stderr.write('exec-phases: --rounds must be a positive integer\n');
  process.exit(2);
}
const client = new UnixClient(socket);

function connect(opUrl: string, secret: string): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`ws+unix://${socket}:${opUrl}/websocket?secret=${encodeURIComponent(secret)}`);
    ws.once('open', () => resolve(ws));
    ws.once('unexpected-response', (_req, res) => reject(new Error(`websocket refused: HTTP ${res.statusCode}`)));
    ws.once('error', reject);
  });
}

const phases = new Map<string, number[]>();
const record = (phase: string, ms: number) => phases.set(phase, [...(phases.get(phase) ?? []), ms]);

try {
  for (let i = 0; i < rounds; i++) await round();
} catch (e) {
  process.stderr.write(`exec-phases: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(1);
}
client.agent.destroy();

async function round(): Promise<void> {
  const t0 = performance.now();
  const r = await client.request('POST', `/1.0/containers/${encodeURIComponent(container)}/exec`, {
    command: [command],
    environment: {},
    'wait-for-websocket': true,
    interactive: false,
  });
  const t1 = performance.now();
  const opUrl: unknown = r.json?.operation;
  const fds: Record<string, string> | undefined = r.json?.metadata?.metadata?.fds;
  if (r.status !== 202 || typeof opUrl !== 'string' || !fds)
    throw new Error(`exec refused: HTTP ${r.status}: ${errorText(r)}`);
  record('POST (answered)', t1 - t0);
  const sockets: WebSocket[] = [];
  const closed: Promise<number>[] = [];
  let prev = t1;
  try {
    for (const fd of ['control', '0', '1', '2']) {
      const ws = await connect(opUrl, fds[fd]!);
      ws.on('error', () => {});
      sockets.push(ws);
      const t = performance.now();
      record(`handshake ${fd}`, t - prev);
      prev = t;
      if (fd === '1' || fd === '2')
        closed.push(new Promise((resolve) => ws.once('close', () => resolve(performance.now()))));
      if (fd === '0') ws.send('', { binary: false });
    }
    const w = await client.request('GET', `${opUrl}/wait?timeout=60`);
    const tw = performance.now();
    if (Number(w.json?.metadata?.status_code) !== 200)
      throw new Error(`exec failed: ${errorText(w) || JSON.stringify(w.json?.metadata)}`);
    record('wait after the last handshake', tw - prev);
    const lastClose = Math.max(...(await Promise.all(closed)));
    record('output closed after the wait', Math.max(0, lastClose - tw));
    record('total', Math.max(tw, lastClose) - t0);
  } finally {
    for (const ws of sockets) ws.terminate();
  }
}

const rows = [...phases].map(([phase, samples]) => {
  const s = summarize(samples);
  return [phase, fmtMs(s.median), fmtMs(s.p95)];
});
process.stdout.write(`exec ${JSON.stringify(command)} with websockets on ${container}, ${rounds} rounds (${socket})\n`);
process.stdout.write(`${table([['phase', 'median', 'p95'], ...rows])}\n`);
