import { useEffect, useState } from 'preact/hooks';
import { hashOf, parseHash, type Route } from '../view/location.ts';
import { currentProject } from './project.ts';

export type { Route } from '../view/location.ts';

/** The page a location hash names: `#/`, `#/containers/<name>`, `#/networks`…, with `?project=`. */
export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseHash(location.hash));
  useEffect(() => {
    const on = () => setRoute(parseHash(location.hash));
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return route;
}

/** A link to another page of the current project. */
export const pageHref = (page: string, name?: string) =>
  hashOf(name === undefined ? { page, project: currentProject() } : { page, name, project: currentProject() });

export const containerHref = (name: string) => pageHref('container', name);
