import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';

/**
 * Write `text` to `file` atomically (temp file + rename) unless it already holds exactly that. Says what
 * it did: `created` (there was no file), `changed` or `unchanged`. Synchronous inside: these are svcd's
 * own small files (LXC config, seccomp policy), a few µs each against ~40 µs of CPU per promise call.
 */
export async function writeFileIfChanged(file: string, text: string, mode = 0o600): Promise<'created' | 'changed' | 'unchanged'> {
  let old: string | undefined;
  try {
    old = readFileSync(file, 'utf8');
  } catch (e) {
    old = (e as NodeJS.ErrnoException).code === 'ENOENT' ? undefined : '';
  }
  if (old === text) return 'unchanged';
  const tmp = `${file}.new`;
  try {
    writeFileSync(tmp, text, { mode });
    renameSync(tmp, file);
  } catch (e) {
    rmSync(tmp, { force: true });
    throw e;
  }
  return old === undefined ? 'created' : 'changed';
}
