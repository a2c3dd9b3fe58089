/**
 * A container volume's `metadata.yaml` and `templates/` (beside `rootfs/`, out of the container's
 * reach). The volume directory is svcd's; what is inside came from an image, so nothing here
 * follows a symlink: files are opened with O_NOFOLLOW and must be regular files, templates/ must
 * be a real directory, and writes go to a temporary file renamed into place (a rename replaces a
 * symlink, never writes through it).
 */
import { randomBytes } from 'node:crypto';
import { closeSync, constants, fstatSync, openSync, readFileSync } from 'node:fs';
import { lstat, mkdir, readdir, rename, rm, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parse, stringify } from 'yaml';
import { isTemplateName, readableContainerMetadata, type ContainerMetadata } from './metadata-format.ts';

export const METADATA_FILE = 'metadata.yaml';
export const TEMPLATES_DIR = 'templates';
/** Template files (and metadata.yaml) larger than this are refused. */
export const MAX_TEMPLATE_BYTES = 4 * 1024 * 1024;

const missing = (e: unknown) => ['ENOENT', 'ENOTDIR'].includes((e as NodeJS.ErrnoException).code ?? '');

/**
 * The bytes of a regular file, not through a symlink; undefined when absent (or not a regular file).
 * Synchronous inside (small local files, see host/storage/fs-helpers.ts): ~10 µs against ~200 µs of
 * CPU for open, stat, read and close as promises.
 */
async function readPlainFile(file: string, limit = MAX_TEMPLATE_BYTES): Promise<Buffer | undefined> {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (e) {
    if (missing(e) || (e as NodeJS.ErrnoException).code === 'ELOOP') return undefined;
    throw e;
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) return undefined;
    if (st.size > limit) throw new Error(`${path.basename(file)} is larger than ${limit} bytes`);
    return readFileSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** Write `data` to `file` through a temporary file in the same directory and a rename. */
async function replaceFile(file: string, data: string | Buffer, mode = 0o644): Promise<void> {
  const tmp = path.join(path.dirname(file), `.${path.basename(file)}.${randomBytes(6).toString('hex')}.tmp`);
  try {
    await writeFile(tmp, data, { mode, flag: 'wx' });
    await rename(tmp, file);
  } catch (e) {
    await rm(tmp, { force: true });
    throw e;
  }
}

/** The container's metadata (empty when the volume has no metadata.yaml). */
export async function readMetadataFile(volumeDir: string): Promise<ContainerMetadata> {
  const raw = await readPlainFile(path.join(volumeDir, METADATA_FILE));
  const text = raw ? raw.toString('utf8') : '';
  let known = parsedMetadata.get(text);
  if (known) {
    // most recently used last
    parsedMetadata.delete(text);
  } else {
    let doc: unknown = {};
    if (text) {
      try {
        doc = parse(text, { maxAliasCount: 100 });
      } catch {
        doc = {};
      }
    }
    known = readableContainerMetadata(doc);
    if (parsedMetadata.size >= PARSED_METADATA_MAX) parsedMetadata.delete(parsedMetadata.keys().next().value!);
  }
  parsedMetadata.set(text, known);
  return structuredClone(known);
}

/**
 * Parsed metadata.yaml by its text: the containers of one image start with the same file, and a
 * YAML parse costs far more than a copy. A few texts, least recently used first out.
 */
const parsedMetadata = new Map<string, ContainerMetadata>();
const PARSED_METADATA_MAX = 16;

export async function writeMetadataFile(volumeDir: string, metadata: ContainerMetadata): Promise<void> {
  await replaceFile(path.join(volumeDir, METADATA_FILE), stringify(metadata));
}

/** `<volume>/templates` if it is a real directory; `create` makes it when absent. */
async function templatesDir(volumeDir: string, create: boolean): Promise<string | undefined> {
  const dir = path.join(volumeDir, TEMPLATES_DIR);
  const st = await lstat(dir).catch((e: unknown) => (missing(e) ? undefined : Promise.reject(e)));
  if (st?.isDirectory()) return dir;
  if (st) throw new Error(`${dir} is not a directory`);
  if (!create) return undefined;
  await mkdir(dir, { mode: 0o755 });
  return dir;
}

/** Names of the template files (regular files in templates/), sorted. */
export async function listTemplateFiles(volumeDir: string): Promise<string[]> {
  const dir = await templatesDir(volumeDir, false);
  if (!dir) return [];
  const entries = await readdir(dir, { withFileTypes: true });
  return entries
    .filter((e) => e.isFile() && isTemplateName(e.name))
    .map((e) => e.name)
    .sort();
}

export async function readTemplateFile(volumeDir: string, name: string): Promise<Buffer | undefined> {
  if (!isTemplateName(name)) return undefined;
  const dir = await templatesDir(volumeDir, false);
  return dir ? readPlainFile(path.join(dir, name)) : undefined;
}

/** Create or replace a template file. */
export async function writeTemplateFile(volumeDir: string, name: string, data: Buffer): Promise<void> {
  if (!isTemplateName(name)) throw new Error(`invalid template name ${JSON.stringify(name)}`);
  const dir = (await templatesDir(volumeDir, true))!;
  await replaceFile(path.join(dir, name), data);
}

/** Remove a template file; false when there is none. */
export async function removeTemplateFile(volumeDir: string, name: string): Promise<boolean> {
  if (!isTemplateName(name)) return false;
  const dir = await templatesDir(volumeDir, false);
  if (!dir) return false;
  const file = path.join(dir, name);
  const st = await lstat(file).catch((e: unknown) => (missing(e) ? undefined : Promise.reject(e)));
  if (!st?.isFile()) return false;
  await unlink(file);
  return true;
}
