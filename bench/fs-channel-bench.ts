/**
 * The fs channel of a migration alone, without the daemons: one file sent by sendTree in one process, received by
 * receiveTree in another, over a websocket on TLS on 127.0.0.1, as between two svcd hosts; then the same file by a
 * plain rsync pair (rsync's own transport, no relay), each with MD5 and with xxh128:
 *   node --import tsx bench/fs-channel-bench.ts [--mib 1024] [--rounds 2]
 * Prints seconds and MiB/s per case, and each process's CPU time (rsyncs, socat, both node processes). The page
 * cache is dropped and the source read back in before each round, so every case starts from the same place.
 * Run by hand (root), never as a test. Everything stays on loopback.
 */
import { execFile, fork } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { WebSocket, WebSocketServer } from 'ws';
import type { RsyncFeature } from '../src/host/migration/rsync-args.ts';
import { receiveTree, sendTree } from '../src/host/migration/rsync-transfer.ts';
import { FsChannel } from '../src/host/migration/ws-frames.ts';

const run = promisify(execFile);
const arg = (name: string, dflt: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1]! : dflt;
};
const cpuSeconds = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
};

// A child: one side of the channel. argv: role dir port features
if (process.argv[2] === 'send' || process.argv[2] === 'receive') {
  const [, , role, dir, port, list] = process.argv;
  const features = list!.split(',') as RsyncFeature[];
  const signal = new AbortController().signal;
  const done = (secs: number) => {
    process.send!({ secs, cpu: cpuSeconds() });
    process.exit(0);
  };
  if (role === 'send') {
    const tmp = path.dirname(dir!);
    const srv = https.createServer({
      key: readFileSync(path.join(tmp, 'key.pem')),
      cert: readFileSync(path.join(tmp, 'cert.pem')),
    });
    const wss = new WebSocketServer({ server: srv, maxPayload: 64 * 1024 * 1024 });
    wss.on('connection', async (ws) => {
      const t0 = performance.now();
      await sendTree(new FsChannel(ws), dir!, { features, signal });
      done((performance.now() - t0) / 1000);
    });
    srv.listen(Number(port), '127.0.0.1', () => process.send!({ listening: true }));
  } else {
    const ws = new WebSocket(`wss://127.0.0.1:${port}/`, { rejectUnauthorized: false, perMessageDeflate: false });
    ws.on('open', async () => {
      const t0 = performance.now();
      await receiveTree(new FsChannel(ws), dir!, { features, signal });
      done((performance.now() - t0) / 1000);
    });
  }
} else {
  await main();
}

async function main() {
  const mib = Number(arg('mib', '1024'));
  const rounds = Number(arg('rounds', '2'));
  const tmp = await mkdtemp(path.join(os.tmpdir(), 'fs-channel-bench-'));
  const src = path.join(tmp, 'src');
  try {
    await run('openssl', [
      ...['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1'],
      ...['-subj', '/CN=localhost', '-keyout', path.join(tmp, 'key.pem'), '-out', path.join(tmp, 'cert.pem')],
    ]);
    await mkdir(src);
    await run('sh', ['-c', `head -c ${mib * 1048576} /dev/urandom > ${src}/big`]);
    const level = async (dst: string) => {
      await rm(dst, { recursive: true, force: true });
      await mkdir(dst);
      await run('sh', ['-c', `sync; echo 3 > /proc/sys/vm/drop_caches; cat ${src}/big > /dev/null`]);
    };
    const rows: string[] = [
      '| case | seconds (each round) | MiB/s (best) | CPU s: svcd sender, receiver |',
      '|---|---|---|---|',
    ];
    for (const cs of ['md5', 'xxh128'] as const) {
      const features = ['xattrs', 'delete', ...(cs === 'xxh128' ? ['xxh128'] : [])].join(',');
      const secs: number[] = [];
      let cpu = '';
      for (let r = 0; r < rounds; r++) {
        const dst = path.join(tmp, 'dst');
        await level(dst);
        const port = 20000 + Math.floor(Math.random() * 20000);
        const child = (role: string, dir: string) =>
          fork(import.meta.filename, [role, dir, String(port), features], { execArgv: ['--import', 'tsx'] });
        const sender = child('send', src);
        await new Promise((r) => sender.once('message', r));
        const receiver = child('receive', dst);
        const [s, v] = await Promise.all(
          [sender, receiver].map((c) => new Promise<{ secs: number; cpu: number }>((r) => c.once('message', r))),
        );
        secs.push(v!.secs);
        cpu = `${s!.cpu.toFixed(2)}, ${v!.cpu.toFixed(2)}`;
      }
      rows.push(
        `| svcd fs channel (TLS websocket), ${cs} | ${secs.map((x) => x.toFixed(2)).join(', ')} | ${(mib / Math.min(...secs)).toFixed(0)} | ${cpu} |`,
      );
    }
    // the plain pair: rsync runs the server itself through a -e that only drops the host argument
    const rsh = path.join(tmp, 'rsh.sh');
    await writeFile(rsh, '#!/bin/sh\nshift\nexec "$@"\n', { mode: 0o755 });
    for (const cs of ['md5', 'xxh128']) {
      const secs: number[] = [];
      for (let r = 0; r < rounds; r++) {
        const dst = path.join(tmp, 'dst');
        await level(dst);
        const t0 = performance.now();
        await run('rsync', ['-a', `--checksum-choice=${cs}`, '-e', rsh, `${src}/`, `localhost:${dst}/`]);
        secs.push((performance.now() - t0) / 1000);
      }
      rows.push(
        `| rsync pair, ${cs} | ${secs.map((x) => x.toFixed(2)).join(', ')} | ${(mib / Math.min(...secs)).toFixed(0)} | |`,
      );
    }
    console.log(rows.join('\n'));
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}
