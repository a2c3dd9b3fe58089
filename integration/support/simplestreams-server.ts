/**
 * A simplestreams image server on 127.0.0.1 over HTTPS with a self-signed certificate, serving a
 * tree built from the suite's busybox image (simplestreams-tree.ts). Tests pin `certificate`. It
 * counts requests per path ("downloaded once"), publishes new versions (the alias moves to the
 * newest), and injects faults per path: a corrupted body, a connection cut after N bytes, a delay.
 */
import { createReadStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { generateCertificate } from '../../src/tls/ensure-server-certificate.ts';
import { buildStreamVersion, renderStream, type StreamItemKind, type StreamVersion } from './simplestreams-tree.ts';

export type StreamFault =
  | { kind: 'corrupt' }
  | { kind: 'cut'; afterBytes: number }
  | { kind: 'status'; status: number };

export interface SimplestreamsServer {
  /** `https://127.0.0.1:<port>` */
  url: string;
  /** The server's self-signed certificate (PEM): pin it. */
  certificate: string;
  /** The product's aliases (the first is `alias`). */
  aliases: string[];
  /** Published versions, oldest first; the newest is what the aliases resolve to. */
  versions: StreamVersion[];
  latest(): StreamVersion;
  /** Requests served per URL path since start or the last resetCounts(). */
  requests(urlPath: string): number;
  resetCounts(): void;
  /** Build and publish a new version (the aliases move to it); `replace` drops the older ones. */
  publish(opts?: { replace?: boolean }): Promise<StreamVersion>;
  /** Inject a fault on a path (undefined clears it). */
  fault(urlPath: string, fault: StreamFault | undefined): void;
  /** Hold every file response this long before sending (to make concurrent pulls overlap). */
  setDelay(ms: number): void;
  close(): Promise<void>;
}

export interface SimplestreamsServerOptions {
  alias?: string;
  /** Item kinds per version (default all three: unified, squashfs, rootxz). */
  kinds?: readonly StreamItemKind[];
  /** Port on 127.0.0.1 (default: any free one). */
  port?: number;
}

export async function startSimplestreamsServer(opts: SimplestreamsServerOptions = {}): Promise<SimplestreamsServer> {
  const root = await mkdtemp(path.join(os.tmpdir(), 'svcd-simplestreams-'));
  const kinds = opts.kinds ?? ['unified', 'squashfs', 'rootxz'];
  const alias = opts.alias ?? 'busybox';
  const aliases = [alias, `${alias}/test`];
  const versions: StreamVersion[] = [];
  const counts = new Map<string, number>();
  const faults = new Map<string, StreamFault>();
  let delayMs = 0;
  let serialNo = 0;
  const nextSerial = () => {
    const d = new Date();
    serialNo += 1;
    return `${d.getUTCFullYear()}${String(d.getUTCMonth() + 1).padStart(2, '0')}${String(d.getUTCDate()).padStart(2, '0')}_${String(serialNo).padStart(4, '0')}`;
  };
  const publish = async ({ replace = false } = {}) => {
    const v = await buildStreamVersion(root, nextSerial(), kinds);
    if (replace) versions.splice(0);
    versions.push(v);
    return v;
  };
  await publish();
  const files = () => new Map(versions.flatMap((v) => Object.values(v.files)).map((f) => [`/${f.path}`, f]));
  const { cert, key } = await generateCertificate('127.0.0.1', { serverAuth: true });

  const server: Server = createServer({ cert, key }, (req, res) => {
    const urlPath = new URL(req.url ?? '/', 'https://x').pathname;
    counts.set(urlPath, (counts.get(urlPath) ?? 0) + 1);
    const fault = faults.get(urlPath);
    if (fault?.kind === 'status') return void res.writeHead(fault.status).end();
    const stream = renderStream({ aliases, os: 'BusyBox', release: 'test', versions });
    if (urlPath === '/streams/v1/index.json' || urlPath === '/streams/v1/images.json') {
      const body = JSON.stringify(urlPath.endsWith('index.json') ? stream.index : stream.products);
      return void res
        .writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) })
        .end(body);
    }
    const file = files().get(urlPath);
    if (!file || req.method !== 'GET') return void res.writeHead(404).end();
    setTimeout(() => {
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': file.size });
      let sent = 0;
      const tamper = new Transform({
        transform(chunk: Buffer, _enc, done) {
          if (fault?.kind === 'cut' && sent + chunk.byteLength > fault.afterBytes) {
            res.write(chunk.subarray(0, fault.afterBytes - sent), () => res.socket?.destroy());
            return;
          }
          if (fault?.kind === 'corrupt' && sent === 0)
            chunk = Buffer.concat([Buffer.from([chunk[0]! ^ 0xff]), chunk.subarray(1)]);
          sent += chunk.byteLength;
          done(null, chunk);
        },
      });
      pipeline(createReadStream(file.file), tamper, res).catch(() => res.destroy());
    }, delayMs);
  });
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: `https://127.0.0.1:${port}`,
    certificate: cert,
    aliases,
    versions,
    latest: () => versions[versions.length - 1] as StreamVersion,
    requests: (p) => counts.get(p) ?? 0,
    resetCounts: () => counts.clear(),
    publish,
    fault: (p, f) => (f ? faults.set(p, f) : faults.delete(p)),
    setDelay: (ms) => {
      delayMs = ms;
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await rm(root, { recursive: true, force: true });
    },
  };
}
