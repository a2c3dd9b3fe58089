import { useEffect, useRef, useState } from 'preact/hooks';
import { compareContainer } from '../view/compare.ts';
import { containersOfEvent, formatBytes } from '../view/format.ts';
import { act, containerPath, get } from './api.ts';
import {
  type Container,
  type ContainerState,
  type Convergence,
  loadOne,
  rowOf,
  startContainers,
  subscribe,
} from './containers-store.ts';
import { type Operation, operationsWith } from './events.ts';
import { currentProject, inProject } from './project.ts';
import { pageHref } from './router.ts';
import { Terminal } from './terminal.tsx';
import { ConvergenceCell, Status } from './status.tsx';
import { KeyValues, Table } from './table.tsx';
import { useData } from './use-data.ts';

interface Snapshot {
  name: string;
  created_at: string;
  stateful: boolean;
}

type Action = 'start' | 'stop' | 'restart' | 'freeze' | 'unfreeze' | 'delete';
const CONFIRM: Partial<Record<Action, string>> = {
  stop: 'Stop this container? Its processes are ended.',
  restart: 'Restart this container? Its processes are ended and started again.',
  delete: 'Delete this container and its snapshots? This cannot be undone.',
};
const LABEL: Record<Action, string> = {
  start: 'Start',
  stop: 'Stop',
  restart: 'Restart',
  freeze: 'Freeze',
  unfreeze: 'Unfreeze',
  delete: 'Delete',
};

export function ContainerDetail({ name }: { name: string }) {
  const [row, setRow] = useState(() => rowOf(name));
  useEffect(() => {
    startContainers();
    const off = subscribe(() => setRow(rowOf(name)));
    void loadOne(name);
    return off;
  }, [name]);
  const aboutMe = (ev: { type: string; metadata: unknown }) => containersOfEvent(ev).includes(name);
  const snaps = useData<Snapshot[]>(containerPath(name, '/snapshots?recursion=1'), aboutMe);
  // Its operations from the daemon's history (by their resources), with what the stream told since.
  const ops = useData<Operation[]>(inProject(`/ui/api/operations?container=${encodeURIComponent(name)}`), aboutMe);
  const [busy, setBusy] = useState<Action | undefined>(undefined);
  const [error, setError] = useState('');
  const [done, setDone] = useState('');
  const [asking, setAsking] = useState<Action | undefined>(undefined);
  const [deleted, setDeleted] = useState(false);

  const run = async (a: Action) => {
    setAsking(undefined);
    setBusy(a);
    setError('');
    setDone('');
    const r =
      a === 'delete'
        ? await act('DELETE', containerPath(name))
        : await act('PUT', containerPath(name, '/state'), { action: a, timeout: 30 });
    setBusy(undefined);
    if (!r.ok) setError(r.error);
    else if (a === 'delete') setDeleted(true);
    else setDone(`${LABEL[a]}: done`);
    if (a !== 'delete') void loadOne(name);
  };
  const ask = (a: Action) => (CONFIRM[a] ? setAsking(a) : void run(a));

  if (deleted)
    return (
      <section>
        <h1>{name}</h1>
        <p role="status">
          Deleted. <a href={pageHref('containers')}>Back to the containers</a>
        </p>
      </section>
    );
  if (!row)
    return (
      <section>
        <h1>{name}</h1>
        <p role="status">
          Loading… (or no such container: <a href={pageHref('containers')}>back to the list</a>)
        </p>
      </section>
    );
  const c: Container = row.c;
  const st: ContainerState | null | undefined = c.state;
  const conv: Convergence | undefined = row.conv;
  const status = st?.status ?? c.status;
  const running = status === 'Running';
  const frozen = status === 'Frozen';
  const actions: Action[] = ['start', 'stop', 'restart', frozen ? 'unfreeze' : 'freeze', 'delete'];
  const enabled = (a: Action) =>
    !busy &&
    (a === 'start'
      ? !running && !frozen
      : a === 'stop' || a === 'restart' || a === 'freeze'
        ? running || (a === 'stop' && frozen)
        : true);
  const compare = compareContainer({
    desiredPower: conv?.desired,
    status,
    generation: conv?.generation,
    observedGeneration: conv?.observed_generation,
    error: conv?.error,
    expandedConfig: c.expanded_config ?? {},
    expandedDevices: c.expanded_devices ?? {},
    pendingRestart: st?.pending_restart ?? [],
    network: st?.network ?? undefined,
  });
  const myOps = operationsWith(Array.isArray(ops.result?.data) ? ops.result.data : [], currentProject(), (o) =>
    containersOfEvent({ type: 'operation', metadata: o }).includes(name),
  );

  return (
    <section aria-labelledby="detail-title">
      <p>
        <a href={pageHref('containers')}>← Containers</a>
      </p>
      <h1 id="detail-title">{name}</h1>
      <p>
        <Status status={status} /> · desired <strong>{conv?.desired ?? '–'}</strong> ·{' '}
        <ConvergenceCell conv={conv} full />
        {running ? ` · pid ${st?.pid} · memory ${formatBytes(st?.memory?.usage)}` : ''}
      </p>
      <fieldset class="actions">
        <legend class="visually-hidden">Actions</legend>
        {actions.map((a) => (
          <button
            key={a}
            type="button"
            class={a === 'delete' ? 'danger' : ''}
            disabled={!enabled(a)}
            onClick={() => ask(a)}
          >
            {busy === a ? `${LABEL[a]}…` : LABEL[a]}
          </button>
        ))}
      </fieldset>
      {error ? (
        <p class="problem" role="alert">
          {error}
        </p>
      ) : null}
      {done ? <p role="status">{done}</p> : null}
      {asking ? (
        <Confirm
          text={CONFIRM[asking]!}
          label={LABEL[asking]}
          onYes={() => run(asking)}
          onNo={() => setAsking(undefined)}
        />
      ) : null}

      <h2>Desired and observed</h2>
      <Table
        caption="Desired against observed; rows that differ are marked"
        head={['What', 'Desired', 'Observed', 'Differs']}
        rows={compare.map((r) => ({
          key: r.what,
          class: r.differs ? 'differs' : '',
          cells: [r.what, r.desired, r.observed, r.differs ? '≠ differs' : '= same'],
        }))}
      />

      <div class="two">
        <div>
          <h2>Expanded config</h2>
          <KeyValues caption="Expanded config" map={c.expanded_config ?? {}} />
        </div>
        <div>
          <h2>Expanded devices</h2>
          <Table
            caption="Expanded devices"
            head={['Device', 'Type', 'Properties']}
            rows={Object.entries(c.expanded_devices ?? {}).map(([dev, d]) => ({
              key: dev,
              cells: [
                dev,
                d.type ?? '',
                Object.entries(d)
                  .filter(([k]) => k !== 'type')
                  .map(([k, v]) => `${k}=${v}`)
                  .join(', '),
              ],
            }))}
          />
        </div>
      </div>

      <h2>Snapshots</h2>
      <Table
        caption="Snapshots"
        head={['Name', 'Created', 'Stateful']}
        rows={(snaps.result?.data ?? []).map((s) => ({
          key: s.name,
          cells: [s.name, s.created_at, s.stateful ? 'yes' : 'no'],
        }))}
        empty="No snapshots."
      />

      <h2>Operations</h2>
      <Table
        caption="Operations on this container, running and recent, newest first"
        head={['Created', 'Description', 'Status', 'Error']}
        rows={myOps.map((o) => ({
          key: o.id,
          class: o.err ? 'differs' : '',
          cells: [o.created_at, o.description, o.status, o.err || '–'],
        }))}
        empty="No recent operations on this container."
      />

      <h2>Console log</h2>
      <ConsoleLog name={name} status={status} />

      <h2>Terminal</h2>
      {running ? <Terminal name={name} /> : <p>The terminal needs a running container.</p>}
    </section>
  );
}

function ConsoleLog({ name, status }: { name: string; status: string }) {
  const [text, setText] = useState<string | undefined>(undefined);
  const load = () =>
    void get<string>(containerPath(name, '/console')).then((r) => setText(r.ok ? String(r.data ?? '') : r.error));
  useEffect(load, [name, status]);
  return (
    <div>
      <button type="button" onClick={load}>
        Reload console log
      </button>
      <pre class="console">{text === undefined ? 'Loading…' : text || '(empty)'}</pre>
    </div>
  );
}

/** A modal question: focus on Cancel first, Escape cancels. */
function Confirm({ text, label, onYes, onNo }: { text: string; label: string; onYes: () => void; onNo: () => void }) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const d = ref.current;
    if (d && !d.open) d.showModal();
    return () => d?.close();
  }, []);
  return (
    <dialog ref={ref} aria-labelledby="confirm-text" onCancel={onNo}>
      <p id="confirm-text">{text}</p>
      <div class="actions">
        <button type="button" autofocus onClick={onNo}>
          Cancel
        </button>
        <button type="button" class="danger" onClick={onYes}>
          {`Yes, ${label.toLowerCase()}`}
        </button>
      </div>
    </dialog>
  );
}
