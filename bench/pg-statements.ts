/**
 * Statements svcd sends to PostgreSQL per API step (create, start, list, stop, delete), counted from the
 * server's log: run svcd on a database of its own with `log_statement = 'all'` for that database only
 * (`ALTER DATABASE <db> SET log_statement = 'all'`, as a superuser), then
 *
 *   node --import tsx bench/pg-statements.ts --socket <svcd socket> --database <db> --image-file <busybox tarball>
 *        [--log /var/log/postgresql/postgresql-15-main.log] [--rounds 3] [--settle-ms 500]
 *
 * Each step is one operation (or one GET), then `--settle-ms` for what the reconciler writes after it
 * answered; the statements of the database logged meanwhile are counted (BEGIN and COMMIT too: each is a
 * round trip), and the most frequent texts are shown. A profiling aid: it asserts nothing.
 */
import { open, stat } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { uploadImageFile } from './lib/image-upload.ts';
import { UnixClient } from './lib/unix-client.ts';

const { values } = parseArgs({
  options: {
    socket: { type: 'string' },
    database: { type: 'string' },
    'image-file': { type: 'string' },
    log: { type: 'string', default: '/var/log/postgresql/postgresql-15-main.log' },
    rounds: { type: 'string', default: '3' },
    'settle-ms': { type: 'string', default: '500' },
  },
});
if (!values.socket || !values.database || !values['image-file']) {
  process.stderr.write(
    'usage: bench/pg-statements.ts --socket <path> --database <db> --image-file <tarball> [--log <file>] [--rounds 3] [--settle-ms 500]\n',
  );
  process.exit(2);
}
const client = new UnixClient(values.socket);
const logFile = values.log!;
const settleMs = Number(values['settle-ms']);
/** A logged statement of this database: `... user@db LOG:  statement: ...` or `execute <name>: ...`. */
const STATEMENT = new RegExp(`@${values.database} LOG:  (?:statement|execute [^:]*): (.*)$`);

async function logSince(offset: number): Promise<string[]> {
  const size = (await stat(logFile)).size;
  const fh = await open(logFile, 'r');
  try {
    const buf = Buffer.alloc(size - offset);
    await fh.read(buf, 0, buf.length, offset);
    return buf
      .toString('utf8')
      .split('\n')
      .flatMap((l) => STATEMENT.exec(l)?.[1] ?? []);
  } finally {
    await fh.close();
  }
}

async function measure(label: string, run: () => Promise<unknown>): Promise<void> {
  const offset = (await stat(logFile)).size;
  await run();
  await new Promise((r) => setTimeout(r, settleMs));
  const statements = await logSince(offset);
  const byText = new Map<string, number>();
  for (const s of statements) {
    const key = s.replace(/\s+/g, ' ').slice(0, 110);
    byText.set(key, (byText.get(key) ?? 0) + 1);
  }
  const commits = statements.filter((s) => /^commit\b/i.test(s)).length;
  process.stdout.write(`${label}: ${statements.length} statements, ${commits} commits\n`);
  for (const [t, n] of [...byText].sort((a, b) => b[1] - a[1]))
    process.stdout.write(`   ${String(n).padStart(3)}  ${t}\n`);
}

const fail = (what: string) => (r: { ok: boolean; error?: string }) => {
  if (!r.ok) throw new Error(`${what}: ${r.error}`);
};
if ((await client.get('/1.0/images/aliases/pgstat-busybox')).status !== 200)
  await uploadImageFile(client, values['image-file']!, 'pgstat-busybox', 60_000);
for (let i = 0; i < Number(values.rounds); i++) {
  const name = `pgstat-${process.pid}-${i}`;
  await measure(`create ${name}`, () =>
    client
      .operation(
        'POST',
        '/1.0/containers',
        { name, profiles: ['default'], source: { type: 'image', alias: 'pgstat-busybox' } },
        60_000,
      )
      .then(fail('create')),
  );
  await measure('start', () =>
    client
      .operation('PUT', `/1.0/containers/${name}/state`, { action: 'start', timeout: -1 }, 60_000)
      .then(fail('start')),
  );
  await measure('list (recursion=1)', () => client.get('/1.0/containers?recursion=1'));
  await measure('stop (force)', () =>
    client
      .operation('PUT', `/1.0/containers/${name}/state`, { action: 'stop', force: true, timeout: -1 }, 60_000)
      .then(fail('stop')),
  );
  await measure('delete', () =>
    client.operation('DELETE', `/1.0/containers/${name}`, undefined, 60_000).then(fail('delete')),
  );
}
client.close();
