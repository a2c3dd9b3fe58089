import { readFile, rename, rm, writeFile } from 'node:fs/promises';

/** Write `text` to `file` atomically (temp file + rename) unless it already holds exactly that; true when written. */
export async function writeFileIfChanged(file: string, text: string, mode = 0o600): Promise<boolean> {
  if ((await readFile(file, 'utf8').catch(() => undefined)) === text) return false;
  const tmp = `${file}.new`;
  try {
    await writeFile(tmp, text, { mode });
    await rename(tmp, file);
  } catch (e) {
    await rm(tmp, { force: true });
    throw e;
  }
  return true;
}
