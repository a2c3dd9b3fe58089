import { Component } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { formatBytes, formatPercent, imageOf, ipv4Of } from '../view/format.ts';
import { type Row, snapshot, startContainers, subscribe } from './containers-store.ts';
import { containerHref } from './router.ts';
import { ConvergenceCell, Status } from './status.tsx';

/** One container's row; re-rendered only when its data changed (1,000 rows stay cheap as events arrive). */
class ContainerRow extends Component<{ row: Row }> {
  override shouldComponentUpdate(next: { row: Row }) {
    return next.row.rev !== this.props.row.rev;
  }
  override render() {
    const { c, conv, cpu } = this.props.row;
    const st = c.state;
    const running = st?.status === 'Running' || st?.status === 'Frozen';
    const ips = ipv4Of(st?.network);
    return (
      <tr data-name={c.name} data-status={c.status} data-pid={st?.pid ?? 0}>
        <th scope="row">
          <a href={containerHref(c.name)}>{c.name}</a>
        </th>
        <td class="col-status">
          <Status status={c.status} />
        </td>
        <td class="col-desired">{conv?.desired ?? '–'}</td>
        <td class="col-convergence">
          <ConvergenceCell conv={conv} />
        </td>
        <td class="col-ipv4">{ips.length ? ips.join(', ') : '–'}</td>
        <td class="col-image">{imageOf(c.config)}</td>
        <td class="col-cpu num">{running ? formatPercent(cpu) : '–'}</td>
        <td class="col-memory num">{running ? formatBytes(st?.memory?.usage) : '–'}</td>
      </tr>
    );
  }
}

export function ContainersPage() {
  const [view, setView] = useState(snapshot);
  useEffect(() => {
    const off = subscribe(() => setView(snapshot()));
    startContainers();
    setView(snapshot());
    return off;
  }, []);
  const counts = new Map<string, number>();
  for (const r of view.rows) counts.set(r.c.status, (counts.get(r.c.status) ?? 0) + 1);
  return (
    <section aria-labelledby="containers-title">
      <h1 id="containers-title">Containers</h1>
      {view.loadError ? (
        <p class="problem" role="alert">
          {view.loadError}
        </p>
      ) : null}
      <p class="summary" aria-live="polite">
        {view.loaded
          ? `${view.rows.length} containers${[...counts].map(([s, n]) => ` · ${n} ${s}`).join('')}`
          : 'Loading…'}
      </p>
      <table class="containers">
        <caption class="visually-hidden">Containers, desired and observed</caption>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Status</th>
            <th scope="col">Desired</th>
            <th scope="col">Convergence</th>
            <th scope="col">IPv4</th>
            <th scope="col">Image</th>
            <th scope="col">CPU</th>
            <th scope="col">Memory</th>
          </tr>
        </thead>
        <tbody>
          {view.rows.map((r) => (
            <ContainerRow key={r.c.name} row={r} />
          ))}
        </tbody>
      </table>
    </section>
  );
}
