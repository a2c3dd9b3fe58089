import { readFileSync } from 'node:fs';
import { rename, rm, writeFile } from 'node:fs/promises';

/**
 * Write `text` to `file` atomically (temp file + rename) unless it already holds exactly that. Says what
 * it did: `created` (there was no file), `changed` or `unchanged`. The read is synchronous (svcd's own
 * small files: a few µs against ~40 µs of CPU per promise call); the writes are not (see
 * host/storage/fs-helpers.ts).
 */
export async function writeFileIfChanged(
  file: string,
  text: string,
  mode = 0o600,
): Promise<'created' | 'changed' | 'unchanged'> {
  let old: string | undefined;
  try {
    old = readFileSync(file, 'utf8');
  } catch (e) {
    old = (e as NodeJS.ErrnoException).code === 'ENOENT' ? undefined : '';
  }
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
