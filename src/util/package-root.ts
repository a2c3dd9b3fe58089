import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * svcd's own directory (package.json, drizzle/, .build/, src/), found up from this module wherever it runs: in
 * src/util/ (tsx), dist/util/ (tsc's output) or dist/bundle/ (the one bundle bin/svcd runs, where every module
 * shares one location). Paths the code resolves next to itself are resolved from here.
 */
export const packageRoot: string = findPackageRoot(path.dirname(fileURLToPath(import.meta.url)));

function findPackageRoot(from: string): string {
  for (let dir = from; ; dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, 'package.json'))) return dir;
    if (path.dirname(dir) === dir) throw new Error(`svcd: no package.json above ${from}`);
  }
}

/** A path under svcd's own directory. */
export const inPackage = (...parts: string[]): string => path.join(packageRoot, ...parts);
