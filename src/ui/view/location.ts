/**
 * The dashboard's place in its URL, pure: the page and the project live in the hash
 * (`#/containers/web?project=dev`), so a reload or a shared link shows the same thing, and the page
 * request itself (`/ui/`) never names a project the daemon would have to check.
 */
export interface Route {
  page: string;
  name?: string;
  /** The project the pages read (`default` when the hash names none). */
  project: string;
}

export const DEFAULT_PROJECT = 'default';

export function parseHash(hash: string): Route {
  const raw = hash.replace(/^#\/?/, '');
  const q = raw.indexOf('?');
  const parts = (q < 0 ? raw : raw.slice(0, q)).split('/').filter(Boolean).map(safeDecode);
  const project = new URLSearchParams(q < 0 ? '' : raw.slice(q + 1)).get('project') || DEFAULT_PROJECT;
  if (parts[0] === 'containers' && parts[1]) return { page: 'container', name: parts[1], project };
  return { page: parts[0] || 'containers', project };
}

/** The hash of a route; the default project is left out, as the API's URLs leave it out. */
export function hashOf(route: Route): string {
  const path = route.page === 'container' && route.name ? `containers/${encodeURIComponent(route.name)}` : route.page;
  return `#/${path}${projectQuery(route.project, '?')}`;
}

/** An API path in a project: `?project=` (or `&project=`) added unless it is the default one. */
export function withProject(path: string, project: string): string {
  return `${path}${projectQuery(project, path.includes('?') ? '&' : '?')}`;
}

/** The name in a project's URL (`/1.0/projects/<name>`). */
export const projectOfUrl = (url: string) => safeDecode(url.slice(url.lastIndexOf('/') + 1));

const projectQuery = (project: string, sep: string) =>
  project && project !== DEFAULT_PROJECT ? `${sep}project=${encodeURIComponent(project)}` : '';

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}
