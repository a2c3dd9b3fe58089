import { useEffect, useState } from 'preact/hooks';
import { api, whenUnauthorized } from './api.ts';
import { ContainerDetail } from './container-detail.tsx';
import { ContainersPage } from './containers-page.tsx';
import { followOperations, onConnection } from './events.ts';
import { EventsPage, followEvents } from './events-page.tsx';
import { ImagesPage, NetworksPage, OperationsPage, ProfilesPage, StoragePage } from './resource-pages.tsx';
import { ProjectSelect } from './project-select.tsx';
import { pageHref, type Route, useRoute } from './router.ts';

const NAV: [string, string][] = [
  ['containers', 'Containers'],
  ['networks', 'Networks'],
  ['storage', 'Storage'],
  ['images', 'Images'],
  ['profiles', 'Profiles'],
  ['operations', 'Operations'],
  ['events', 'Events'],
];

export function App() {
  const route = useRoute();
  const [denied, setDenied] = useState(false);
  const [live, setLive] = useState(false);
  useEffect(() => {
    whenUnauthorized(() => setDenied(true));
    followEvents();
    followOperations();
    return onConnection(setLive);
  }, []);
  useEffect(() => {
    const title = NAV.find(([p]) => p === route.page)?.[1] ?? route.name ?? '';
    document.title = `${title} · svcd`;
  }, [route.page, route.name]);
  const current = route.page === 'container' ? 'containers' : route.page;
  const logout = async () => {
    await api('POST', '/ui/logout');
    location.href = '/ui/';
  };
  return (
    <>
      <header class="top">
        <span class="brand">svcd</span>
        <nav aria-label="Main">
          <ul>
            {NAV.map(([page, label]) => (
              <li key={page}>
                <a href={pageHref(page)} aria-current={current === page ? 'page' : undefined}>
                  {label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <ProjectSelect route={route} />
        <span class={`live ${live ? 'on' : 'off'}`} role="status">
          {live ? '● live' : '○ reconnecting…'}
        </span>
        <button type="button" onClick={logout}>
          Log out
        </button>
      </header>
      <main id="main">
        {denied ? (
          <p class="problem" role="alert">
            Not logged in, or the session ended. Run <code>svcd ui</code> on the host for a new login URL.
          </p>
        ) : null}
        <Page key={route.project} route={route} />
      </main>
    </>
  );
}

/** The current page; a new project mounts it anew (its reads and its state are the other project's). */
function Page({ route }: { route: Route }) {
  switch (route.page) {
    case 'container':
      return <ContainerDetail key={route.name} name={route.name!} />;
    case 'networks':
      return <NetworksPage />;
    case 'storage':
      return <StoragePage />;
    case 'images':
      return <ImagesPage />;
    case 'profiles':
      return <ProfilesPage />;
    case 'operations':
      return <OperationsPage />;
    case 'events':
      return <EventsPage />;
    default:
      return <ContainersPage />;
  }
}
