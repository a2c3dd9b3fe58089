import { useEffect, useState } from 'preact/hooks';
import { formatBytes } from '../view/format.ts';
import { get } from './api.ts';
import { type Operation, operationsWith } from './events.ts';
import { currentProject, inProject } from './project.ts';
import { Table } from './table.tsx';
import { useData } from './use-data.ts';

const anyOf =
  (...types: string[]) =>
  (ev: { type: string; metadata: unknown }) =>
    types.includes(ev.type);

function Problem({ error }: { error: string | undefined }) {
  return error ? (
    <p class="problem" role="alert">
      {error}
    </p>
  ) : null;
}

/** One GET per item of a list (leases, state, resources…), kept by item name. */
function useEach<T>(names: string[], path: (name: string) => string): Record<string, T | undefined> {
  const [out, setOut] = useState<Record<string, T | undefined>>({});
  const key = names.join('\0');
  useEffect(() => {
    let live = true;
    void Promise.all(names.map(async (n) => [n, (await get<T>(path(n))).data] as const)).then((pairs) => {
      if (live) setOut(Object.fromEntries(pairs));
    });
    return () => {
      live = false;
    };
  }, [key]);
  return out;
}

interface Network {
  name: string;
  type: string;
  managed: boolean;
  status: string;
  config: Record<string, string>;
  used_by: string[] | null;
}
interface Lease {
  hostname: string;
  address: string;
  hwaddr: string;
  type: string;
}
interface NetState {
  state: string;
  mtu: number;
  hwaddr: string;
}

export function NetworksPage() {
  const { result } = useData<Network[]>(inProject('/1.0/networks?recursion=1'), anyOf('lifecycle'));
  const nets = result?.data ?? [];
  const managed = nets.filter((n) => n.managed).map((n) => n.name);
  const leases = useEach<Lease[]>(managed, (n) => inProject(`/1.0/networks/${encodeURIComponent(n)}/leases`));
  const states = useEach<NetState>(
    nets.map((n) => n.name),
    (n) => inProject(`/1.0/networks/${encodeURIComponent(n)}/state`),
  );
  return (
    <section>
      <h1>Networks</h1>
      <Problem error={result?.error} />
      <Table
        caption="Networks"
        head={['Name', 'Type', 'Managed', 'Status', 'Link state', 'IPv4', 'Used by']}
        rows={nets.map((n) => ({
          key: n.name,
          cells: [
            n.name,
            n.type,
            n.managed ? 'yes' : 'no',
            n.status || '–',
            states[n.name]?.state ?? '–',
            n.config['ipv4.address'] ?? '–',
            String(n.used_by?.length ?? 0),
          ],
        }))}
        empty="No networks."
      />
      {managed.map((n) => (
        <div key={n}>
          <h2>Leases on {n}</h2>
          <Table
            caption={`Leases on ${n}`}
            head={['Hostname', 'Address', 'MAC', 'Type']}
            rows={(leases[n] ?? []).map((l) => ({
              key: `${l.address}${l.hwaddr}`,
              cells: [l.hostname || '–', l.address, l.hwaddr, l.type],
            }))}
            empty="No leases."
          />
        </div>
      ))}
    </section>
  );
}

interface Pool {
  name: string;
  driver: string;
  status: string;
  config: Record<string, string>;
  used_by: string[] | null;
}
interface PoolResources {
  space?: { used: number; total: number };
}
interface Volume {
  name: string;
  type: string;
  content_type: string;
  config: Record<string, string>;
  used_by: string[] | null;
}

export function StoragePage() {
  const { result } = useData<Pool[]>('/1.0/storage-pools?recursion=1', anyOf('lifecycle'));
  const pools = result?.data ?? [];
  const names = pools.map((p) => p.name);
  const res = useEach<PoolResources>(names, (n) => `/1.0/storage-pools/${encodeURIComponent(n)}/resources`);
  const vols = useEach<Volume[]>(names, (n) =>
    inProject(`/1.0/storage-pools/${encodeURIComponent(n)}/volumes?recursion=1`),
  );
  return (
    <section>
      <h1>Storage</h1>
      <Problem error={result?.error} />
      <Table
        caption="Storage pools"
        head={['Pool', 'Driver', 'Status', 'Used', 'Total', 'Used by']}
        rows={pools.map((p) => ({
          key: p.name,
          cells: [
            p.name,
            p.driver,
            p.status || '–',
            formatBytes(res[p.name]?.space?.used),
            formatBytes(res[p.name]?.space?.total),
            String(p.used_by?.length ?? 0),
          ],
        }))}
        empty="No storage pools."
      />
      {names.map((n) => (
        <div key={n}>
          <h2>Volumes on {n}</h2>
          <Table
            caption={`Volumes on ${n}`}
            head={['Name', 'Type', 'Content', 'Size limit', 'Used by']}
            rows={(vols[n] ?? []).map((v) => ({
              key: `${v.type}/${v.name}`,
              cells: [v.name, v.type, v.content_type, v.config.size ?? '–', String(v.used_by?.length ?? 0)],
            }))}
            empty="No volumes."
          />
        </div>
      ))}
    </section>
  );
}

interface Image {
  fingerprint: string;
  aliases: { name: string }[];
  properties: Record<string, string>;
  size: number;
  public: boolean;
  uploaded_at: string;
  cached: boolean;
}

export function ImagesPage() {
  const { result } = useData<Image[]>(inProject('/1.0/images?recursion=1'), anyOf('lifecycle'));
  return (
    <section>
      <h1>Images</h1>
      <Problem error={result?.error} />
      <Table
        caption="Images"
        head={['Fingerprint', 'Aliases', 'Description', 'Size', 'Public', 'Cached', 'Uploaded']}
        rows={(result?.data ?? []).map((i) => ({
          key: i.fingerprint,
          cells: [
            i.fingerprint.slice(0, 12),
            i.aliases.map((a) => a.name).join(', ') || '–',
            i.properties.description ?? '–',
            formatBytes(i.size),
            i.public ? 'yes' : 'no',
            i.cached ? 'yes' : 'no',
            i.uploaded_at,
          ],
        }))}
        empty="No images."
      />
    </section>
  );
}

interface Profile {
  name: string;
  description: string;
  config: Record<string, string>;
  devices: Record<string, Record<string, string>>;
  used_by: string[] | null;
}

export function ProfilesPage() {
  const { result } = useData<Profile[]>(inProject('/1.0/profiles?recursion=1'), anyOf('lifecycle'));
  return (
    <section>
      <h1>Profiles</h1>
      <Problem error={result?.error} />
      <Table
        caption="Profiles"
        head={['Name', 'Description', 'Config', 'Devices', 'Used by']}
        rows={(result?.data ?? []).map((p) => ({
          key: p.name,
          cells: [
            p.name,
            p.description || '–',
            Object.entries(p.config)
              .map(([k, v]) => `${k}=${v}`)
              .join(', ') || '–',
            Object.entries(p.devices)
              .map(([k, d]) => `${k} (${d.type})`)
              .join(', ') || '–',
            String(p.used_by?.length ?? 0),
          ],
        }))}
        empty="No profiles."
      />
    </section>
  );
}

export function OperationsPage() {
  // The daemon's history (running and finished ones, with their errors), and what the stream told since.
  const { result } = useData<Operation[]>(inProject('/ui/api/operations'), anyOf('operation'));
  const ops = operationsWith(Array.isArray(result?.data) ? result.data : [], currentProject());
  return (
    <section>
      <h1>Operations</h1>
      <Problem error={result?.error} />
      <Table
        caption="Operations, running and recent, newest first"
        head={['Created', 'Description', 'Class', 'Status', 'Resources', 'Error']}
        rows={ops.map((o) => ({
          key: o.id,
          class: o.err ? 'differs' : '',
          cells: [
            o.created_at,
            o.description,
            o.class,
            o.status,
            Object.values(o.resources ?? {})
              .flat()
              .join(', ') || '–',
            o.err || '–',
          ],
        }))}
        empty="No operations."
      />
    </section>
  );
}
