import { createHash } from 'node:crypto';
import type { ImageFiles } from '../inspect-image.ts';
import { downloadToFile } from './download-to-file.ts';
import { createRemoteHttps, joinServerUrl, readJsonBody, type RemoteHttps } from './remote-https.ts';
import type { DownloadProgress, RemoteImageInfo, RemoteImageSource, RemoteProtocol } from './remote-protocol.ts';
import { parseProducts, type StreamImage } from './simplestreams/parse-products.ts';
import { parseStreamIndex } from './simplestreams/parse-stream-index.ts';
import { selectStreamImage } from './simplestreams/select-stream-image.ts';

export interface SimplestreamsProtocolDeps {
  /** The HTTPS client (default: a new one with pinning and keep-alive). */
  https?: RemoteHttps;
  /** How long a server's parsed index and products are reused (default 10 s; LXD caches for an hour). */
  catalogTtlMs?: number;
  /** Deadline for fetching one server's index and products files (default 60 s). */
  catalogTimeoutMs?: number;
  now?: () => number;
}

export interface SimplestreamsProtocol extends RemoteProtocol {
  /** Every container image a server offers (what `lxc image list` of it would show). */
  list(source: Pick<RemoteImageSource, 'server' | 'certificate'>, signal: AbortSignal): Promise<StreamImage[]>;
  close(): void;
}

/**
 * The `simplestreams` protocol: GET `<server>/streams/v1/index.json` → the products files of its
 * image-downloads entries → the image an alias or fingerprint means for the host's architectures →
 * its files (a unified tarball, or metadata + squashfs / root.tar.xz), streamed to disk with every
 * published sha256 and the fingerprint verified. The parsed catalog of a server is shared for a short
 * TTL, and concurrent first requests share one fetch, so 50 launches read the stream once.
 */
export function createSimplestreamsProtocol(deps: SimplestreamsProtocolDeps = {}): SimplestreamsProtocol {
  const client = deps.https ?? createRemoteHttps();
  const ttl = deps.catalogTtlMs ?? 10_000;
  const now = deps.now ?? Date.now;
  const catalogs = new Map<string, { at: number; images: Promise<StreamImage[]> }>();

  const fetchJson = async (url: URL, certificate: string | undefined, signal: AbortSignal) =>
    readJsonBody(await client.get(url, certificate, signal), url);

  const loadCatalog = async (server: string, certificate: string | undefined): Promise<StreamImage[]> => {
    const signal = AbortSignal.timeout(deps.catalogTimeoutMs ?? 60_000);
    const indexUrl = joinServerUrl(server, 'streams/v1/index.json');
    const paths = parseStreamIndex(await fetchJson(indexUrl, certificate, signal), indexUrl.href);
    const lists = await Promise.all(
      paths.map(async (p) => {
        const url = joinServerUrl(server, p);
        return parseProducts(await fetchJson(url, certificate, signal), url.href);
      }),
    );
    return lists.flat();
  };

  const catalog = (
    source: Pick<RemoteImageSource, 'server' | 'certificate'>,
    signal: AbortSignal,
  ): Promise<StreamImage[]> => {
    const key = `${source.server}\n${source.certificate ?? ''}`;
    let entry = catalogs.get(key);
    if (!entry || now() - entry.at > ttl) {
      const images = loadCatalog(source.server, source.certificate);
      const fresh = { at: now(), images };
      entry = fresh;
      catalogs.set(key, fresh);
      images.catch(() => {
        if (catalogs.get(key) === fresh) catalogs.delete(key);
      });
    }
    return raceAbort(entry.images, signal);
  };

  return {
    list: catalog,
    async resolve(source, architectures, signal) {
      if ((source.alias === undefined) === (source.fingerprint === undefined))
        throw new Error('A simplestreams pull needs exactly one of alias and fingerprint');
      const image = selectStreamImage(await catalog(source, signal), source, architectures, source.server);
      return toRemoteInfo(image);
    },
    async download(source, info, into, progress, signal) {
      const image = (await catalog(source, signal)).find((i) => i.fingerprint === info.fingerprint);
      if (!image) throw new Error(`Image ${info.fingerprint} is no longer offered by ${source.server}`);
      await downloadImage(client, source, image, into, progress, signal);
    },
    close() {
      catalogs.clear();
      if (!deps.https) client.close();
    },
  };
}

async function downloadImage(
  client: RemoteHttps,
  source: RemoteImageSource,
  image: StreamImage,
  into: ImageFiles,
  progress: DownloadProgress,
  signal: AbortSignal,
): Promise<void> {
  if (image.rootfs && !into.rootfs) throw new Error(`Image ${image.fingerprint} is split: a rootfs path is needed`);
  const combined = createHash('sha256');
  let received = 0;
  const parts = image.rootfs
    ? ([
        [image.meta, into.meta],
        [image.rootfs, into.rootfs as string],
      ] as const)
    : ([[image.meta, into.meta]] as const);
  for (const [file, path] of parts) {
    const url = joinServerUrl(source.server, file.path);
    const res = await client.get(url, source.certificate, signal);
    await downloadToFile({
      res,
      url,
      path,
      sha256: file.sha256,
      size: file.size,
      alsoHash: combined,
      onBytes: (n) => progress((received += n), image.size),
    });
  }
  const got = combined.digest('hex');
  if (got !== image.fingerprint)
    throw new Error(
      `Fingerprint mismatch for the image from ${source.server}: the stream says ${image.fingerprint}, the files hash to ${got}`,
    );
}

function toRemoteInfo(image: StreamImage): RemoteImageInfo {
  return {
    fingerprint: image.fingerprint,
    architecture: image.architecture,
    public: true,
    properties: { ...image.properties },
    aliases: image.aliases.map((name) => ({ name, description: '' })),
    filename: image.filename,
    split: image.rootfs !== undefined,
    size: image.size,
    createdAt: image.createdAt,
    expiresAt: image.expiresAt,
  };
}

/** `p`, or an AbortError as soon as `signal` aborts (the shared fetch goes on for the others). */
function raceAbort<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}
