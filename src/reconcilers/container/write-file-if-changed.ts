import { readFile, rename, rm, writeFile } from 'node:fs/promises';

/**
 * Write `text` to `file` atomically (temp file + rename) unless it already holds exactly that. Says what
 * it did: `created` (there was no file), `changed` or `unchanged`.
 */
export async function writeFileIfChanged(file: string, text: string, mode = 0o600): Promise<'created' | 'changed' | 'unchanged'> {
  const old = await readFile(file, 'utf8').catch((e: NodeJS.ErrnoException) => (e.code === 'ENOENT' ? undefined : ''));
  if (old === text) return 'unchanged';
  const tmp = `${file}.new`;
  try {
    await writeFile(tmp, text, { mode });
    await rename(tmp, file);
  } catch (e) {
    await rm(tmp, { force: true });
    throw e;
  }
  return old === undefined ? 'created' : 'changed';
}
