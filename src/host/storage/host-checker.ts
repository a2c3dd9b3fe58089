/** Cheap host facts for driver probes: executables on a search path, files, /proc text. No process spawned. */
import { constants } from 'node:fs';
import { access, readFile, stat } from 'node:fs/promises';
import path from 'node:path';

export interface HostChecker {
  /** Is an executable with this name in one of the search directories? */
  hasTool(tool: string): Promise<boolean>;
  exists(p: string): Promise<boolean>;
  /** File content, or undefined when it cannot be read. */
  readText(p: string): Promise<string | undefined>;
}

/** Where root's tools live on Debian (the daemon's environment is not consulted). */
export const DEFAULT_SEARCH_PATH: readonly string[] = [
  '/usr/local/sbin',
  '/usr/local/bin',
  '/usr/sbin',
  '/usr/bin',
  '/sbin',
  '/bin',
];

export function createHostChecker(opts: { searchPath?: readonly string[] } = {}): HostChecker {
  const searchPath = opts.searchPath ?? DEFAULT_SEARCH_PATH;
  return {
    async hasTool(tool) {
      for (const dir of searchPath) {
        const file = path.join(dir, tool);
        try {
          if ((await stat(file)).isFile()) {
            await access(file, constants.X_OK);
            return true;
          }
        } catch {
          // not here
        }
      }
      return false;
    },
    async exists(p) {
      return stat(p).then(
        () => true,
        () => false,
      );
    },
    async readText(p) {
      return readFile(p, 'utf8').catch(() => undefined);
    },
  };
}
