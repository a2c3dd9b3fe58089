/**
 * The file API's operations on a container's files (views.ts), every path resolved in-root
 * (resolve-in-root.ts). Ownership is always the container's view of it (entry-owner.ts). Only
 * regular files, directories and symlinks are served or replaced: a device node or FIFO planted in
 * the container is refused, never opened (a privileged container could plant the host's disk).
 *
 * One file per verb: read-entry.ts (GET), write-file.ts, make-directory.ts and make-symlink.ts
 * (POST; new entries made where creation-dir.ts says), remove-entry.ts (DELETE); file-errors.ts
 * names what the host's file system refused.
 */
export type { Owner, WriteRequest } from './entry-owner.ts';
export { fsError } from './file-errors.ts';
export { makeDirectory } from './make-directory.ts';
export { makeSymlink } from './make-symlink.ts';
export { readEntry, SMALL_FILE, type Entry } from './read-entry.ts';
export { removeEntry } from './remove-entry.ts';
export { writeFile } from './write-file.ts';
