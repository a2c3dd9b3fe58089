import { createHash } from 'node:crypto';
import type { Context } from 'hono';
import { ValidationError } from '../../desired/errors.ts';
import type { AppEnv } from '../context.ts';
import { HttpError } from '../errors.ts';
import type { HashedFile, ImageFiles, ImageHost } from '../host-service.ts';
import { MultipartError, readMultipart } from '../../util/multipart-parser.ts';
import type { ImageBody } from './image-body.ts';
import { uploadHeader, type ImageRoutesContext } from './image-common.ts';
import { cleanFilename, type ImageOptions, type ReceivedImage } from '../image-commit.ts';
import { parseBool } from '../../util/parse-bool.ts';
import { isInvalidInput } from '../errors.ts';

/** Upload options from the X-SVC-* (or X-LXD-*) headers. */
export function uploadOptions(c: Context<AppEnv>): ImageOptions {
  const pub = uploadHeader(c, 'public');
  let isPublic = false;
  if (pub !== undefined && pub !== '') {
    if (parseBool(pub)) isPublic = true;
    else if (!/^(false|0|no|off)$/i.test(pub))
      throw new ValidationError(`Invalid X-SVC-public header "${pub}": expected true or false`);
  }
  const properties: Record<string, string> = {};
  const raw = uploadHeader(c, 'properties');
  if (raw) {
    for (const [k, v] of new URLSearchParams(raw)) {
      if (k in properties) throw new ValidationError(`Invalid X-SVC-properties header: key "${k}" is given twice`);
      if (k.includes('\0') || v.includes('\0'))
        throw new ValidationError('Invalid X-SVC-properties header: NUL characters are not allowed');
      properties[k] = v;
    }
  }
  return {
    filename: cleanFilename(uploadHeader(c, 'filename')),
    public: isPublic,
    autoUpdate: false,
    properties,
    aliases: [],
  };
}

/**
 * Stream an upload to temporary files in the image store while hashing it: the raw body is a
 * unified tarball; a multipart/form-data body has the parts `metadata` then `rootfs` (a split
 * image, hashed as metadata bytes then rootfs bytes). Then check X-SVC-fingerprint and inspect
 * the files. Any refusal (400) leaves nothing behind.
 */
export async function receiveUpload(
  ictx: ImageRoutesContext,
  c: Context<AppEnv>,
  body: ImageBody,
  boundary: string | undefined,
): Promise<ReceivedImage & { partFilename?: string }> {
  const split = boundary !== undefined;
  const temp = ictx.store.tempFiles(split);
  const hash = createHash('sha256');
  const open: HashedFile[] = [];
  let size = 0;
  let partFilename: string | undefined;
  let kept = false;
  try {
    await ictx.store.init();
    if (!split) {
      const file = await ictx.store.createHashedFile(temp.meta, hash);
      open.push(file);
      for await (const chunk of body.chunks()) await file.write(chunk);
      size = await file.close();
    } else {
      await receiveSplit(ictx.store, temp, body.chunks(), boundary, hash, open, (name) => (partFilename = name)).catch(
        async (e: unknown) => {
          const drained = await body.drain();
          const message =
            e instanceof MultipartError || isInvalidInput(e) ? `Invalid multipart image: ${e.message}` : undefined;
          if (message) throw new HttpError(400, message, drained ? {} : { Connection: 'close' });
          throw e;
        },
      );
      for (const f of open) size += await f.close();
    }
    const fingerprint = hash.digest('hex');
    const expected = uploadHeader(c, 'fingerprint');
    if (expected && expected.toLowerCase() !== fingerprint)
      throw new ValidationError(
        `Fingerprint mismatch: the upload hashes to ${fingerprint}, X-SVC-fingerprint says ${expected}`,
      );
    if (size === 0) throw new ValidationError('Invalid image: the upload is empty');
    const inspected = await ictx.store.inspect(temp);
    kept = true;
    return { temp, fingerprint, size, inspected, ...(partFilename ? { partFilename } : {}) };
  } finally {
    if (!kept) {
      await Promise.all(open.map((f) => f.close().catch(() => 0)));
      await ictx.store.discard(temp);
    }
  }
}

async function receiveSplit(
  store: ImageHost,
  temp: ImageFiles,
  chunks: AsyncIterable<Uint8Array>,
  boundary: string,
  hash: ReturnType<typeof createHash>,
  open: HashedFile[],
  setName: (n: string) => void,
): Promise<void> {
  let current: HashedFile | undefined;
  let parts = 0;
  await readMultipart(chunks, boundary, {
    async onPart(part) {
      parts++;
      if (parts === 1 && part.name !== 'metadata')
        throw new MultipartError(`the first part must be "metadata", not "${part.name}"`);
      if (parts === 2) {
        if (part.name === 'rootfs.img') throw new ValidationError('virtual-machine images are not supported');
        if (part.name !== 'rootfs') throw new MultipartError(`the second part must be "rootfs", not "${part.name}"`);
        if (part.filename) setName(part.filename);
      }
      if (parts > 2) throw new MultipartError(`unexpected part "${part.name}" after metadata and rootfs`);
      current = await store.createHashedFile(parts === 1 ? temp.meta : temp.rootfs!, hash);
      open.push(current);
    },
    onData: (chunk) => current!.write(chunk),
    async onPartEnd() {
      current = undefined;
    },
  });
  if (parts < 2) throw new MultipartError('a split image needs the parts "metadata" and "rootfs"');
}
