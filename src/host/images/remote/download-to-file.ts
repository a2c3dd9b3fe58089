import { createHash, type Hash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { createHashedFile } from '../hashed-file.ts';
import { describeFailure } from './remote-https.ts';

export interface DownloadToFile {
  res: IncomingMessage;
  url: URL;
  /** Must not exist yet. */
  path: string;
  /** The sha256 the remote publishes for this file ('' when none). */
  sha256: string;
  /** The size the remote publishes (0 when unknown). */
  size: number;
  /** Fed every byte too (a split image's fingerprint runs over both files). */
  alsoHash?: Hash | undefined;
  onBytes(n: number): void;
}

/**
 * Stream a response body to disk (never held whole), hashing as it goes; then check the length
 * (Content-Length and the published size) and the published sha256. A dropped connection, a short
 * body or a wrong hash throws a message naming the URL; the caller removes the file.
 */
export async function downloadToFile(d: DownloadToFile): Promise<void> {
  const hash = createHash('sha256');
  const file = await createHashedFile(d.path, hash);
  let received = 0;
  try {
    for await (const chunk of d.res) {
      const buf = chunk as Buffer;
      d.alsoHash?.update(buf);
      await file.write(buf);
      received += buf.byteLength;
      d.onBytes(buf.byteLength);
    }
  } catch (e) {
    const err = e as Error;
    if (err.name === 'AbortError') throw err;
    const dropped = (err as NodeJS.ErrnoException).code === 'ECONNRESET' || err.message === 'aborted';
    const why = dropped
      ? 'the connection was dropped'
      : describeFailure(e, d.url, false).message.replace(/^Failed to fetch \S+: /, '');
    throw new Error(`Download of ${d.url.href} failed after ${received} bytes: ${why}`);
  } finally {
    await file.close();
  }
  const announced = Number(d.res.headers['content-length'] ?? NaN);
  if (!d.res.complete || (Number.isFinite(announced) && received !== announced)) {
    throw new Error(
      `Download of ${d.url.href} was cut short: received ${received} of ${Number.isFinite(announced) ? announced : d.size || '?'} bytes`,
    );
  }
  if (d.size > 0 && received !== d.size)
    throw new Error(`Download of ${d.url.href} has ${received} bytes, the stream says ${d.size}`);
  const got = hash.digest('hex');
  if (d.sha256 && got !== d.sha256)
    throw new Error(`SHA-256 mismatch for ${d.url.href}: the stream says ${d.sha256}, the download is ${got}`);
}
