import { useEffect, useState } from 'preact/hooks';

/** The page a location hash names: `#/`, `#/containers/<name>`, `#/networks`… */
export interface Route {
  page: string;
  name?: string;
}

export function parseHash(hash: string): Route {
  const parts = hash.replace(/^#\/?/, '').split('/').filter(Boolean).map(decodeURIComponent);
  if (parts[0] === 'containers' && parts[1]) return { page: 'container', name: parts[1] };
  return { page: parts[0] || 'containers' };
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseHash(location.hash));
  useEffect(() => {
    const on = () => setRoute(parseHash(location.hash));
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return route;
}

export const containerHref = (name: string) => `#/containers/${encodeURIComponent(name)}`;
