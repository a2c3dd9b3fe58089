import { hashOf, projectOfUrl, type Route } from '../view/location.ts';
import { useData } from './use-data.ts';

const aboutProjects = (ev: { type: string; metadata: unknown }) =>
  ev.type === 'lifecycle' && String((ev.metadata as { action?: string })?.action ?? '').startsWith('project-');

/**
 * The project the pages show, from /1.0/projects. Choosing one rewrites the URL's hash, so a reload keeps
 * it; a container's page goes back to the list (the other project has other containers).
 */
export function ProjectSelect({ route }: { route: Route }) {
  // The list of URLs, not recursion=1: the names are all it needs, and each project's used_by would cost a
  // read of every container in it.
  const { result } = useData<string[]>('/1.0/projects', aboutProjects);
  const names = (Array.isArray(result?.data) ? result.data : []).map(projectOfUrl);
  if (!names.includes(route.project)) names.push(route.project);
  const choose = (project: string) => {
    const page = route.page === 'container' ? 'containers' : route.page;
    location.hash = hashOf({ page, project });
  };
  return (
    <span class="project">
      <label for="project-select">Project</label>
      <select
        id="project-select"
        value={route.project}
        onChange={(e) => choose((e.currentTarget as HTMLSelectElement).value)}
      >
        {names.sort().map((n) => (
          <option key={n} value={n}>
            {n}
          </option>
        ))}
      </select>
    </span>
  );
}
