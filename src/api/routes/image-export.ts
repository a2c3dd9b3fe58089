import { randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import { Readable } from 'node:stream';
import type { Context } from 'hono';
import { HostFailureError } from '../../desired/errors.ts';
import type { ImageRow } from '../../desired/schema/index.ts';
import { detectFileCompression, extensionOf } from '../../host/images/detect-compression.ts';
import type { AppEnv } from '../context.ts';
import { imageLifecycle, imageUrl, visibleImage, type ImageRoutesContext } from './image-common.ts';

/** `attachment; filename=...`: a bare token when possible, quoted otherwise, RFC 5987 for non-ASCII. */
export function contentDisposition(filename: string, type = 'attachment'): string {
  if (/^[A-Za-z0-9!#$&+.^_`|~-]+$/.test(filename)) return `${type}; filename=${filename}`;
  const ascii = filename.replace(/[^\x20-\x7e]/g, '_').replace(/(["\\])/g, '\\$1');
  if (/^[\x20-\x7e]*$/.test(filename)) return `${type}; filename="${ascii}"`;
  return `${type}; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(filename)}`;
}

const partHead = (boundary: string, name: string, filename: string, first: boolean) =>
  Buffer.from(
    `${first ? '' : '\r\n'}--${boundary}\r\nContent-Disposition: ${contentDisposition(filename, 'form-data').replace('form-data;', `form-data; name="${name}";`)}\r\nContent-Type: application/octet-stream\r\n\r\n`,
  );

/**
 * GET /1.0/images/<fp>/export: the stored bytes as uploaded. A unified image is the tarball with
 * Content-Disposition; a split image is multipart/form-data with the parts `metadata` and
 * `rootfs`, as LXD sends them (the lxc CLI hashes both to check the fingerprint).
 */
export async function exportImage(ictx: ImageRoutesContext, c: Context<AppEnv>): Promise<Response> {
  const img = await visibleImage(ictx, c, c.req.param('fingerprint') ?? '');
  return sendImageFiles(c, img, ictx.store.files(img.fingerprint, img.split), () => imageLifecycle(ictx, c, 'image-retrieved', imageUrl(c, img.fingerprint)));
}

/**
 * Answer with an image's files (the body of an image export, also used by devsvc): opened before
 * answering, then `opened()` is called (for the lifecycle event).
 */
export async function sendImageFiles(c: Context, img: ImageRow, files: { meta: string; rootfs?: string | undefined }, opened: () => void = () => {}): Promise<Response> {
  // Open the files now: a delete that follows cannot cut the download short.
  const missing = (e: unknown): never => {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') throw new HostFailureError(`The files of image ${img.fingerprint} are missing on this host`);
    throw e;
  };
  const metaFh = await open(files.meta, 'r').catch(missing);
  const rootfsFh = files.rootfs
    ? await open(files.rootfs, 'r').catch(async (e: unknown) => {
        await metaFh.close();
        return missing(e);
      })
    : undefined;
  opened();
  const metaSize = (await metaFh.stat()).size;
  const metaExt = extensionOf(await detectFileCompression(files.meta));
  if (!rootfsFh) {
    c.header('Content-Type', 'application/octet-stream');
    c.header('Content-Length', String(metaSize));
    c.header('Content-Disposition', contentDisposition(exportName(img, metaExt)));
    return c.body(Readable.toWeb(createReadStream('', { fd: metaFh, autoClose: true })) as ReadableStream);
  }
  const rootfsSize = (await rootfsFh.stat()).size;
  const rootfsExt = extensionOf(await detectFileCompression(files.rootfs!));
  const boundary = randomBytes(30).toString('hex');
  const heads = [partHead(boundary, 'metadata', `meta-${img.fingerprint}${metaExt}`, true), partHead(boundary, 'rootfs', `${img.fingerprint}${rootfsExt}`, false)];
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  async function* body() {
    try {
      yield heads[0]!;
      yield* createReadStream('', { fd: metaFh, autoClose: false });
      yield heads[1]!;
      yield* createReadStream('', { fd: rootfsFh!, autoClose: false });
      yield tail;
    } finally {
      await metaFh.close().catch(() => {});
      await rootfsFh!.close().catch(() => {});
    }
  }
  c.header('Content-Type', `multipart/form-data; boundary=${boundary}`);
  c.header('Content-Length', String(heads[0]!.length + metaSize + heads[1]!.length + rootfsSize + tail.length));
  return c.body(Readable.toWeb(Readable.from(body())) as ReadableStream);
}

/** The name a unified image is exported under: its X-SVC-filename, else `<fingerprint><ext>`. */
function exportName(img: ImageRow, ext: string): string {
  return img.filename || `${img.fingerprint}${ext || '.tar.gz'}`;
}
