import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { errorText, type UnixClient } from './unix-client.ts';

export async function sha256File(file: string): Promise<string> {
  const h = createHash('sha256');
  for await (const chunk of createReadStream(file)) h.update(chunk as Buffer);
  return h.digest('hex');
}

/**
 * Upload a unified image tarball (unless the server has it) and alias it; returns its fingerprint, whether
 * this call imported it (the caller deletes it then), and how long the import took.
 */
export async function uploadImageFile(
  client: UnixClient,
  file: string,
  alias: string,
  opTimeoutMs: number,
): Promise<{ fingerprint: string; imported: boolean; importMs?: number }> {
  const fingerprint = await sha256File(file);
  let imported = false;
  let importMs: number | undefined;
  if ((await client.get(`/1.0/images/${fingerprint}`)).status !== 200) {
    const body = await readFile(file);
    const started = performance.now();
    const r = await client.request('POST', '/1.0/images', body, {
      'Content-Type': 'application/octet-stream',
      'X-LXD-filename': path.basename(file),
      'X-SVC-filename': path.basename(file),
    });
    const opUrl = r.json?.operation;
    if (r.status !== 202 || typeof opUrl !== 'string')
      throw new Error(`image upload: HTTP ${r.status} ${errorText(r)}`);
    const op = await client.waitOperation(opUrl, Date.now() + opTimeoutMs);
    if (Number(op?.status_code) !== 200) throw new Error(`image upload failed: ${op?.err}`);
    imported = true;
    importMs = performance.now() - started;
  }
  const a = await client.request('POST', '/1.0/images/aliases', {
    name: alias,
    description: 'bench image',
    target: fingerprint,
  });
  if (a.status !== 200 && a.status !== 201) throw new Error(`alias ${alias}: HTTP ${a.status} ${errorText(a)}`);
  return { fingerprint, imported, ...(importMs !== undefined ? { importMs } : {}) };
}
