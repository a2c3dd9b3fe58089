import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { inPackage } from '../util/package-root.ts';
import type { UiAssets } from './build-ui-assets.ts';

export interface UiAsset {
  body: string;
  gzip: Buffer;
  type: string;
}

export interface LoadedUiAssets {
  files: Map<string, UiAsset>;
  /** A short hash of them all, for the pages' asset URLs (a new build is fetched anew). */
  version: string;
}

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
};

async function readBuilt(dir: string): Promise<UiAssets> {
  const names = (await readdir(dir)).filter((n) => TYPES[path.extname(n)]);
  if (!names.includes('app.js')) throw new Error(`no app.js in ${dir}`);
  return Object.fromEntries(await Promise.all(names.map(async (n) => [n, await readFile(path.join(dir, n), 'utf8')])));
}

const here = path.dirname(fileURLToPath(import.meta.url));
/** Where scripts/build.sh wrote them: dist/ui/assets/, for dist/ui/ and the bundle in dist/bundle/ alike. */
const builtDir = here.startsWith(inPackage('dist') + path.sep)
  ? inPackage('dist/ui/assets')
  : path.join(here, 'assets');

/**
 * The dashboard's bundle: the one the build wrote (dist/ui/assets/), or, running from src/, one built now in
 * memory. Loaded once and gzipped once; callers share the promise.
 */
export function createUiAssets(dir = builtDir) {
  let loading: Promise<LoadedUiAssets> | undefined;
  const load = async (): Promise<LoadedUiAssets> => {
    const built = await readBuilt(dir).catch(async () => (await import('./build-ui-assets.ts')).buildUiAssets());
    const hash = createHash('sha256');
    const files = new Map<string, UiAsset>();
    for (const [name, body] of Object.entries(built).sort(([a], [b]) => a.localeCompare(b))) {
      hash.update(name).update(body);
      files.set(name, { body, gzip: gzipSync(body, { level: 9 }), type: TYPES[path.extname(name)]! });
    }
    return { files, version: hash.digest('hex').slice(0, 12) };
  };
  return {
    get(): Promise<LoadedUiAssets> {
      loading ??= load();
      // A failed build is tried again at the next request, not remembered.
      loading.catch(() => (loading = undefined));
      return loading;
    },
  };
}
export type UiAssetsSource = ReturnType<typeof createUiAssets>;
