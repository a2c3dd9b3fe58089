import { createHash, type Hash } from 'node:crypto';
import type http from 'node:http';
import { boundaryOf, readMultipart } from '../../../util/multipart-parser.ts';
import { createHashedFile, type HashedFile } from '../hashed-file.ts';
import type { ImageFiles } from '../inspect-image.ts';
import { downloadToFile } from './download-to-file.ts';
import { createRemoteHttps, joinServerUrl, type RemoteHttps } from './remote-https.ts';
import { readEnvelope } from './svc-envelope.ts';
import type { RemoteImageInfo, RemoteImageSource, RemoteProtocol } from './remote-protocol.ts';

const FULL_FINGERPRINT = /^[0-9a-f]{64}$/;

/** The URL of a path on the server, with `?secret=` when one is given. */
export function svcUrl(server: string, path: string, secret?: string): URL {
  const url = joinServerUrl(server, path);
  if (secret) url.searchParams.set('secret', secret);
  return url;
}

const stamp = (s: unknown) =>
  typeof s === 'string' && !s.startsWith('0001-') && !s.startsWith('1970-') ? new Date(s) : undefined;

/** The image object of the other server's API as RemoteImageInfo (split is only learnt at download: see download). */
// biome-ignore lint/suspicious/noExplicitAny: the other server's JSON, read field by field with checks
export function parseSvcImage(m: any, server: string): RemoteImageInfo {
  const fingerprint = String(m?.fingerprint ?? '').toLowerCase();
  if (!FULL_FINGERPRINT.test(fingerprint)) throw new Error(`${server} answered an image without a valid fingerprint`);
  return {
    fingerprint,
    architecture: String(m.architecture ?? ''),
    public: m.public === true,
    properties: Object.fromEntries(
      Object.entries((m.properties ?? {}) as Record<string, unknown>).map(([k, v]) => [k, String(v)]),
    ),
    aliases: Array.isArray(m.aliases)
      ? m.aliases.map((a: { name?: unknown; description?: unknown } | null) => ({
          name: String(a?.name ?? ''),
          description: String(a?.description ?? ''),
        }))
      : [],
    filename: typeof m.filename === 'string' ? m.filename : '',
    split: false,
    size: Number.isFinite(m.size) ? Number(m.size) : 0,
    createdAt: stamp(m.created_at),
    expiresAt: stamp(m.expires_at),
  };
}

/**
 * The `svc` protocol: another svcd's (or LXD's) /1.0/images API, as a guest, with this server's
 * certificate as TLS client certificate. An alias is looked up (`/1.0/images/aliases/<a>`), then
 * the image (`/1.0/images/<fp>[?secret=]`; a fingerprint prefix is resolved by the server, as LXD's
 * is); the export is a unified tarball or a multipart body (`metadata` + `rootfs` parts: a split
 * image), streamed to disk and hashed on the way, and the fingerprint checked.
 */
export function createSvcProtocol(deps: {
  clientCert?: { cert: string; key: string } | undefined;
  https?: RemoteHttps;
}): RemoteProtocol {
  const client = deps.https ?? createRemoteHttps({ clientCert: deps.clientCert });
  const get = (source: RemoteImageSource, path: string, signal: AbortSignal, secret?: string) =>
    client.request(svcUrl(source.server, path, secret), source.certificate || undefined, signal);

  return {
    async resolve(source, architectures, signal) {
      // As LXD: a name is tried as an alias first, then as a fingerprint (prefix); `lxc image copy`
      // sends a public image's alias in the fingerprint field.
      const name = source.alias ?? source.fingerprint ?? '';
      if (!name) throw new Error('Missing fingerprint or alias');
      let fingerprint = name.toLowerCase();
      if (!FULL_FINGERPRINT.test(fingerprint)) {
        const res = await get(source, `/1.0/images/aliases/${encodeURIComponent(name)}`, signal);
        if (res.statusCode === 404 && !source.alias) res.resume();
        else fingerprint = String((await readEnvelope(res, `Image alias "${name}" on ${source.server}`))?.target ?? '');
      }
      const info = parseSvcImage(
        await readEnvelope(
          await get(source, `/1.0/images/${encodeURIComponent(fingerprint)}`, signal, source.secret),
          `Image "${fingerprint}" on ${source.server}`,
        ),
        source.server,
      );
      if (architectures.length && info.architecture && !architectures.includes(info.architecture))
        throw new Error(
          `Image ${info.fingerprint} on ${source.server} is for ${info.architecture}, which this host cannot run (${architectures.join(', ')})`,
        );
      return info;
    },

    /**
     * A multipart answer is a split image: its rootfs part goes to `into.rootfs`, which the caller
     * must give (the pull path always does, and looks at what was written).
     */
    async download(source, image, into, progress, signal) {
      const path = `/1.0/images/${image.fingerprint}/export`;
      const res = await get(source, path, signal, source.secret);
      const what = `Image ${image.fingerprint} from ${source.server}`;
      if (res.statusCode !== 200) await readEnvelope(res, `Export of ${what.toLowerCase()}`);
      const total = Number(res.headers['content-length']) || image.size;
      let received = 0;
      const onBytes = (n: number) => progress((received += n), total);
      const boundary = boundaryOf(res.headers['content-type']);
      if (!boundary) {
        // The URL named in messages without the secret.
        await downloadToFile({
          res,
          url: svcUrl(source.server, path),
          path: into.meta,
          sha256: image.fingerprint,
          size: 0,
          onBytes,
        });
        return;
      }
      const sha = createHash('sha256');
      try {
        await writeParts(counted(res, onBytes), boundary, into, sha);
      } catch (e) {
        res.destroy();
        if (signal.aborted) throw e;
        throw new Error(`${what}: the download failed after ${received} bytes: ${(e as Error).message}`);
      }
      if (!res.complete || (total && received < total))
        throw new Error(`${what}: the download was cut short (${received} of ${total} bytes)`);
      const got = sha.digest('hex');
      if (got !== image.fingerprint) throw new Error(`${what}: SHA-256 mismatch: the download hashes to ${got}`);
    },
  };
}

async function* counted(body: http.IncomingMessage, onBytes: (n: number) => void): AsyncGenerator<Uint8Array> {
  for await (const chunk of body as AsyncIterable<Buffer>) {
    onBytes(chunk.length);
    yield chunk;
  }
}

/** The parts of a split export: `metadata` then `rootfs` (hashed in that order, which is the fingerprint's). */
async function writeParts(
  body: AsyncIterable<Uint8Array>,
  boundary: string,
  into: ImageFiles,
  sha: Hash,
): Promise<void> {
  let file: HashedFile | undefined;
  const seen: string[] = [];
  try {
    await readMultipart(body, boundary, {
      async onPart(part) {
        const expected = seen.length === 0 ? 'metadata' : 'rootfs';
        if (part.name !== expected && !(expected === 'rootfs' && part.name === 'rootfs.img'))
          throw new Error(`unexpected part "${part.name}" in the export (expected "${expected}")`);
        const target = expected === 'metadata' ? into.meta : into.rootfs;
        if (!target) throw new Error('a split image was sent where a unified one was expected');
        seen.push(expected);
        file = await createHashedFile(target, sha);
      },
      async onData(chunk) {
        await file!.write(chunk);
      },
      async onPartEnd() {
        await file?.close();
        file = undefined;
      },
    });
  } finally {
    await file?.close();
  }
  if (seen.length !== 2) throw new Error(`the export has ${seen.length === 0 ? 'no parts' : 'no rootfs part'}`);
}
