import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';

/**
 * A container being moved to another member, marked on the member it leaves: `<stateDir>/migrations/
 * leaving-<id>.json` holds its reconcile facts as they were here (which nics' DHCP entries, which live state
 * this host has), since the member it goes to rewrites them. Once the move committed, this host's copy is
 * removed with them and the mark goes; a move that failed drops the mark and keeps the copy. A mark found at
 * start says which of the two a crash interrupted (the container's location decides).
 */
export function createLeavingMarks(stateDir: string) {
  const dir = path.join(stateDir, 'migrations');
  const PREFIX = 'leaving-';
  const file = (id: string) => path.join(dir, `${PREFIX}${id}.json`);
  return {
    async write(id: string, facts: Record<string, unknown>): Promise<void> {
      await mkdir(dir, { recursive: true, mode: 0o700 });
      const tmp = `${file(id)}.tmp`;
      await writeFile(tmp, JSON.stringify({ id, facts }), { mode: 0o600, flush: true });
      await rename(tmp, file(id));
    },
    /** The facts recorded when the move began (undefined: no move of it left this host). */
    async read(id: string): Promise<Record<string, unknown> | undefined> {
      const text = await readFile(file(id), 'utf8').catch(() => undefined);
      return text === undefined ? undefined : (JSON.parse(text) as { facts: Record<string, unknown> }).facts;
    },
    remove: (id: string) => rm(file(id), { force: true }),
    async list(): Promise<string[]> {
      const names = await readdir(dir).catch(() => [] as string[]);
      return names.filter((n) => n.startsWith(PREFIX) && n.endsWith('.json')).map((n) => n.slice(PREFIX.length, -5));
    },
  };
}
export type LeavingMarks = ReturnType<typeof createLeavingMarks>;
