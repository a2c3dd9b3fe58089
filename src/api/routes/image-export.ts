import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import type { Context } from 'hono';
import type { ImageRow } from '../../desired/schema/index.ts';
import type { AppEnv } from '../context.ts';
import type { OpenedImageFiles } from '../host-service.ts';
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
  return sendImageFiles(
    c,
    img,
    () => ictx.store.open(img),
    () => imageLifecycle(ictx, c, 'image-retrieved', imageUrl(c, img.fingerprint)),
  );
}

/**
 * Answer with an image's files (the body of an image export, also used by devsvc): opened before
 * answering (a delete that follows cannot cut the download short), then `opened()` is called (for
 * the lifecycle event).
 */
export async function sendImageFiles(
  c: Context,
  img: ImageRow,
  open: () => Promise<OpenedImageFiles>,
  opened: () => void = () => {},
): Promise<Response> {
  const { meta, rootfs } = await open();
  opened();
  if (!rootfs) {
    c.header('Content-Type', 'application/octet-stream');
    c.header('Content-Length', String(meta.size));
    c.header('Content-Disposition', contentDisposition(exportName(img, meta.ext)));
    return c.body(Readable.toWeb(meta.stream()) as ReadableStream);
  }
  const boundary = randomBytes(30).toString('hex');
  const heads = [
    partHead(boundary, 'metadata', `meta-${img.fingerprint}${meta.ext}`, true),
    partHead(boundary, 'rootfs', `${img.fingerprint}${rootfs.ext}`, false),
  ];
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  async function* body() {
    try {
      yield heads[0]!;
      yield* meta.stream();
      yield heads[1]!;
      yield* rootfs!.stream();
      yield tail;
    } finally {
      await meta.close();
      await rootfs!.close();
    }
  }
  c.header('Content-Type', `multipart/form-data; boundary=${boundary}`);
  c.header('Content-Length', String(heads[0]!.length + meta.size + heads[1]!.length + rootfs.size + tail.length));
  return c.body(Readable.toWeb(Readable.from(body())) as ReadableStream);
}

/** The name a unified image is exported under: its X-SVC-filename, else `<fingerprint><ext>`. */
function exportName(img: ImageRow, ext: string): string {
  return img.filename || `${img.fingerprint}${ext || '.tar.gz'}`;
}
