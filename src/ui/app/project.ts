import { parseHash, withProject } from '../view/location.ts';

/** The project the URL names (the hash, see view/location.ts): read at each call, so it is never stale. */
export const currentProject = () => parseHash(location.hash).project;

/** An API path in the current project. */
export const inProject = (path: string) => withProject(path, currentProject());
