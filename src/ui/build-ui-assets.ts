import path from 'node:path';
import { packageRoot } from '../util/package-root.ts';

const root = packageRoot;

/** File name (app.js, app.css, chunk-<hash>.js…) → content. */
export type UiAssets = Record<string, string>;

/**
 * Bundle the dashboard (src/ui/app/main.tsx: preact, xterm and their CSS) with esbuild, in memory: app.js
 * and app.css, and chunks loaded when needed (xterm, two thirds of the code, only with a terminal). scripts/build.sh writes them to dist/ui/assets/; a daemon run from
 * src/ builds them at its start instead, so they are never staler than the code.
 */
export async function buildUiAssets(): Promise<UiAssets> {
  const esbuild = await import('esbuild');
  const result = await esbuild.build({
    entryPoints: [path.join(root, 'src/ui/app/main.tsx')],
    bundle: true,
    minify: true,
    format: 'esm',
    target: 'es2022',
    jsx: 'automatic',
    jsxImportSource: 'preact',
    write: false,
    outdir: '/out',
    entryNames: 'app',
    chunkNames: 'chunk-[hash]',
    splitting: true,
    legalComments: 'none',
    logLevel: 'silent',
  });
  return Object.fromEntries(result.outputFiles.map((f) => [path.basename(f.path), f.text]));
}

// `node dist/ui/build-ui-assets.js <dir>` (scripts/build.sh): write the files into <dir> (not when imported).
if (/(^|\/)build-ui-assets\.[jt]s$/.test(process.argv[1] ?? '')) {
  const { mkdir, writeFile } = await import('node:fs/promises');
  const dir = process.argv[2];
  if (!dir) throw new Error('usage: build-ui-assets <dir>');
  const assets = await buildUiAssets();
  await mkdir(dir, { recursive: true });
  for (const [name, text] of Object.entries(assets)) await writeFile(path.join(dir, name), text);
}
