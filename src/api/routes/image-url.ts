import { createHash } from 'node:crypto';
import { ValidationError } from '../../desired/errors.ts';
import { createAlias, findImage } from '../../desired/images.ts';
import type { ImageRow } from '../../desired/schema/index.ts';
import type { ImageRoutesContext } from './image-common.ts';
import { commitImage, type ImageOptions } from '../image-commit.ts';

const USER_AGENT = 'svcd';

/** A source URL must be absolute http(s). */
export function checkSourceUrl(raw: string | undefined): URL {
  if (!raw) throw new ValidationError('Missing "source.url"');
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ValidationError(`Invalid "source.url": ${JSON.stringify(raw)} is not a URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new ValidationError(`Invalid "source.url": only http and https URLs are supported`);
  return url;
}

/**
 * Import from a web server, as LXD's `url` source does: a HEAD request on the URL (sending
 * LXD-Server-Architectures and LXD-Server-Version) must answer with `LXD-Image-Hash` (the
 * fingerprint) and `LXD-Image-URL` (where the unified tarball is); that file is downloaded,
 * checked against the hash and inspected. An image the project already has is not downloaded again.
 */
export async function importFromUrl(
  ictx: ImageRoutesContext,
  project: string,
  source: URL,
  opts: ImageOptions,
  signal: AbortSignal,
): Promise<{ image: ImageRow; existed: boolean }> {
  const { deps, store } = ictx;
  const head = await fetch(source, {
    method: 'HEAD',
    redirect: 'follow',
    signal,
    headers: {
      'User-Agent': USER_AGENT,
      'LXD-Server-Architectures': deps.host.architectures.join(', '),
      'LXD-Server-Version': '5.0.2',
    },
  });
  if (!head.ok) throw new Error(`Cannot resolve ${source.href}: ${head.status} ${head.statusText}`);
  const hash = (head.headers.get('lxd-image-hash') ?? '').trim().toLowerCase();
  const location = head.headers.get('lxd-image-url');
  if (!hash) throw new Error('Missing LXD-Image-Hash header');
  if (!location) throw new Error('Missing LXD-Image-URL header');
  if (!/^[0-9a-f]{64}$/.test(hash)) throw new Error(`Invalid LXD-Image-Hash header "${hash}"`);
  const imageUrl = new URL(location, head.url || source);
  if (imageUrl.protocol !== 'http:' && imageUrl.protocol !== 'https:')
    throw new Error('LXD-Image-URL must be an http or https URL');

  const existing = await findImage(deps.db, project, hash);
  if (existing) {
    for (const a of opts.aliases)
      await createAlias(deps.db, project, { name: a.name, target: hash, description: a.description ?? '' });
    return { image: existing, existed: true };
  }

  await store.init();
  const temp = store.tempFiles(false);
  let kept = false;
  try {
    const res = await fetch(imageUrl, { redirect: 'follow', signal, headers: { 'User-Agent': USER_AGENT } });
    if (res.status !== 200 || !res.body)
      throw new Error(`Cannot fetch ${imageUrl.href}: ${res.status} ${res.statusText}`);
    const sha = createHash('sha256');
    const file = await store.createHashedFile(temp.meta, sha);
    let size: number;
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) await file.write(chunk);
    } finally {
      size = await file.close();
    }
    const got = sha.digest('hex');
    if (got !== hash) throw store.invalid(`Hash mismatch for ${imageUrl.href}: ${got} != ${hash}`);
    const inspected = await store.inspect(temp, signal);
    kept = true;
    const filename = opts.filename || '';
    return {
      image: await commitImage(ictx, project, { temp, fingerprint: got, size, inspected }, { ...opts, filename }),
      existed: false,
    };
  } finally {
    if (!kept) await store.discard(temp);
  }
}
