/**
 * Several svcd hosts on one machine, for multi-host tests (images from other servers, later
 * migration and clustering). Each host is a daemon started from this checkout (support/daemon.ts)
 * with its own state directory and an HTTPS listener on 127.0.0.1:<free port> (core.https_address).
 *
 *   const [a, b] = await startTwoHosts();      // or startHosts(n)
 *   await trustHost(a, b);                  // b trusts a's server certificate (a pulls from b as trusted)
 *   const img = await importTestImage(b, { alias: 'bb', public: true });
 *   b.guest().get('/1.0/images')            // HTTPS, no client certificate: a guest
 *   a.api.post('/1.0/images', { source: { type: 'image', mode: 'pull', server: b.url, alias: 'bb', certificate: b.cert } })
 *   await stopHosts([a, b]);
 *
 * Everything stays on loopback.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { buildBusyboxImage, type BusyboxImage } from './busybox-image.ts';
import { waitOp } from './container-env.ts';
import { startDaemon, type Daemon, type DaemonOptions } from './daemon.ts';
import { subscribeEvents } from './events.ts';
import { client, freePort, type Client } from './http.ts';

export interface Host {
  name: string;
  daemon: Daemon;
  /** The unix socket: trusted. */
  api: Client;
  port: number;
  /** `https://127.0.0.1:<port>` */
  url: string;
  /** The host's server certificate (PEM): what `certificate` pins. */
  cert: string;
  /** Over HTTPS with no client certificate: a guest. */
  guest(): Client;
  /** Over HTTPS with this client certificate (trusted once added to the host's trust store). */
  as(clientCert: { cert: string; key: string }): Client;
}

/** Start `n` hosts (named a, b, c…), each listening on HTTPS on 127.0.0.1. */
export async function startHosts(n: number, opts: DaemonOptions = {}): Promise<Host[]> {
  return Promise.all(Array.from({ length: n }, (_, i) => startHost(String.fromCharCode(97 + i), opts)));
}

/** Two hosts, a and b. */
export async function startTwoHosts(opts: DaemonOptions = {}): Promise<[Host, Host]> {
  const [a, b] = await startHosts(2, opts);
  return [a!, b!];
}

export async function startHost(name: string, opts: DaemonOptions = {}): Promise<Host> {
  const daemon = await startDaemon({ ...opts, env: { SVCD_LOG_LEVEL: 'info', SVCD_NODE_NAME: name, ...opts.env } });
  const api = client({ socketPath: daemon.socketPath });
  const port = await freePort();
  const set = await api.patch('/1.0', { config: { 'core.https_address': `127.0.0.1:${port}` } });
  assert.equal(set.status, 200, set.text);
  const cert = (await api.get('/1.0')).json.metadata.environment.certificate as string;
  return {
    name,
    daemon,
    api,
    port,
    url: `https://127.0.0.1:${port}`,
    cert,
    guest: () => client({ https: { host: '127.0.0.1', port } }),
    as: (c) => client({ https: { host: '127.0.0.1', port, cert: c.cert, key: c.key } }),
  };
}

/** `on` trusts `from`'s server certificate (svcd connects to other servers with it as its client certificate). */
export async function trustHost(from: Host, on: Host): Promise<void> {
  const res = await on.api.post('/1.0/certificates', {
    type: 'client',
    name: `host-${from.name}`,
    certificate: pemBody(from.cert),
  });
  assert.equal(res.status, 200, res.text);
}

/** A PEM's base64 body (what POST /1.0/certificates takes). */
export const pemBody = (pem: string) => pem.replace(/-----[^-]+-----/g, '').replace(/\s+/g, '');

/**
 * Build the busybox test image (support/busybox-image.ts) and upload it to `host`; optionally
 * public and aliased. Returns the image (its files stay in `dir` until the caller removes it).
 */
export async function importTestImage(
  host: Host,
  opts: { alias?: string; public?: boolean; format?: 'unified' | 'split'; dir?: string; creationDate?: number } = {},
): Promise<BusyboxImage & { dir: string }> {
  const dir = opts.dir ?? (await mkdtemp(path.join(os.tmpdir(), 'svcd-img-')));
  const img = await buildBusyboxImage({
    dir,
    format: opts.format ?? 'unified',
    compression: 'gzip',
    ...(opts.creationDate ? { creationDate: opts.creationDate } : {}),
  });
  const headers = { 'X-SVC-public': String(opts.public ?? false) };
  if (img.format === 'unified') {
    await waitOp(
      host.api,
      await host.api.post('/1.0/images', await readFile(img.file), {
        'Content-Type': 'application/octet-stream',
        ...headers,
      }),
    );
  } else {
    const { multipartBody } = await import('./images.ts');
    const { body, contentType } = multipartBody([
      ['metadata', path.basename(img.metadataFile), await readFile(img.metadataFile)],
      ['rootfs', path.basename(img.rootfsFile), await readFile(img.rootfsFile)],
    ]);
    await waitOp(host.api, await host.api.post('/1.0/images', body, { 'Content-Type': contentType, ...headers }));
  }
  if (opts.alias)
    assert.equal(
      (await host.api.post('/1.0/images/aliases', { name: opts.alias, target: img.fingerprint })).status,
      200,
    );
  return { ...img, dir };
}

/**
 * Two hosts where b serves the test image publicly under `alias` (a pulls from it): the image, its files' dir,
 * and how many times b has exported an image so far (its image-retrieved lifecycle events).
 */
export async function startSourceAndTarget(alias = 'bb'): Promise<{
  a: Host;
  b: Host;
  image: BusyboxImage & { dir: string };
  exports: () => number;
  closeEvents: () => void;
}> {
  const [a, b] = await startTwoHosts();
  const image = await importTestImage(b, { alias, public: true });
  const ev = await subscribeEvents(b.daemon.socketPath, '?type=lifecycle');
  return {
    a,
    b,
    image,
    exports: () => ev.events.filter((e) => e.metadata?.action === 'image-retrieved').length,
    closeEvents: ev.close,
  };
}

/** Stop every host and remove its state (and each image dir given). */
export async function stopHosts(hosts: (Host | undefined)[], dirs: (string | undefined)[] = []): Promise<void> {
  await Promise.all(hosts.map((h) => h?.daemon.destroy()));
  await Promise.all(dirs.filter((d): d is string => !!d).map((d) => rm(d, { recursive: true, force: true })));
}

/** The sink's log line for a received container. */
export function receivedLine(h: Host, name: string): Record<string, unknown> {
  const line = h.daemon
    .output()
    .split('\n')
    .filter((l) => l.includes('"container received"') && l.includes(`"container":"${name}"`))
    .at(-1);
  assert.ok(line, `no "container received" line for ${name}`);
  return JSON.parse(line) as Record<string, unknown>;
}
