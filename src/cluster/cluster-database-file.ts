/**
 * Where a member of a cluster on the embedded engine finds the cluster's database, kept in its state
 * directory (`cluster-database.json`, root only: it holds the member's database password):
 * - `served`: this member's private server is the cluster's database (it bootstrapped the cluster); the
 *   server is then shared, so it is opened as one (others' commits are listened for);
 * - `member`: the database is the private server of the member at `address`, reached through the database
 *   tunnel, which must present the cluster certificate (`pin`), as role `user`.
 * No file: the daemon's own database (DATABASE_URL's, or its private server alone).
 */
import { readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import * as v from 'valibot';

const ClusterDatabase = v.variant('mode', [
  v.object({ mode: v.literal('served') }),
  v.object({
    mode: v.literal('member'),
    address: v.string(),
    pin: v.string(),
    user: v.string(),
    password: v.string(),
    database: v.string(),
  }),
]);
export type ClusterDatabase = v.InferOutput<typeof ClusterDatabase>;

const fileOf = (stateDir: string) => path.join(stateDir, 'cluster-database.json');

export async function readClusterDatabase(stateDir: string): Promise<ClusterDatabase | undefined> {
  const text = await readFile(fileOf(stateDir), 'utf8').catch((e: NodeJS.ErrnoException) => {
    if (e.code === 'ENOENT') return undefined;
    throw e;
  });
  if (text === undefined) return undefined;
  const parsed = v.safeParse(ClusterDatabase, JSON.parse(text));
  if (!parsed.success)
    throw new Error(`${fileOf(stateDir)} is not a cluster database record: ${parsed.issues[0].message}`);
  return parsed.output;
}

/** Written whole or not at all (a temporary file renamed over). */
export async function writeClusterDatabase(stateDir: string, record: ClusterDatabase): Promise<void> {
  const file = fileOf(stateDir);
  await writeFile(`${file}.tmp`, `${JSON.stringify(record)}\n`, { mode: 0o600 });
  await rename(`${file}.tmp`, file);
}

export const removeClusterDatabase = (stateDir: string) => rm(fileOf(stateDir), { force: true });
