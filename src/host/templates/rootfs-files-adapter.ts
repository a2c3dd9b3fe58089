import { existsSync, statSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import type { RootfsFilesAdapter } from '../../reconcilers/adapters.ts';
import { readMetadataFile, readTemplateFile, writeMetadataFile } from './metadata-files.ts';
import { renderTemplate } from './render-template.ts';
import { existsInRoot, writeInRoot } from './write-in-root.ts';

/** The real root volumes: files on the pool's mounted filesystem. */
export function createRootfsFilesAdapter(): RootfsFilesAdapter {
  return {
    exists: async (p) => existsSync(p),
    async ensureDir(dir, mode) {
      // A stat first (a few µs): every pass of a converged container looks.
      if (!statSync(dir, { throwIfNoEntry: false })?.isDirectory()) await mkdir(dir, { recursive: true, mode });
    },
    async remove(p) {
      await rm(p, { force: true });
    },
    readMetadata: readMetadataFile,
    writeMetadata: writeMetadataFile,
    readTemplate: readTemplateFile,
    existsInRoot,
    async writeInRoot(rootfs, target, content) {
      await writeInRoot(rootfs, target, content);
    },
    renderTemplate: (source, context) => renderTemplate(source, context),
  };
}
