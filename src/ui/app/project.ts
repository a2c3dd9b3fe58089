import { parseHash, withProject } from '../view/location.ts';

let parsedHash: string | undefined;
let parsedProject = 'default';

/**
 * The project the URL names (the hash, see view/location.ts): read at each call, so it is never stale,
 * and parsed once per hash (each of 1,000 rows links with it).
 */
export function currentProject(): string {
  if (location.hash !== parsedHash) {
    parsedHash = location.hash;
    parsedProject = parseHash(parsedHash).project;
  }
  return parsedProject;
}

/** An API path in the current project. */
export const inProject = (path: string) => withProject(path, currentProject());
