import { randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Context } from 'hono';
import { CONTAINER_KIND, containerUrl, insertContainer, validateContainer, type ContainerInput } from '../../desired/containers.ts';
import { lockProfiles } from '../../desired/profiles.ts';
import { ValidationError } from '../../desired/errors.ts';
import { profileProjectOf, readProject } from '../../desired/projects.ts';
import { importFileOf } from '../../host/backups/backup-files.ts';
import { readBackupIndex } from '../../host/backups/backup-tarball.ts';
import type { AppEnv } from '../context.ts';
import type { ApiDeps } from '../deps.ts';
import { writeWithOperation } from '../desired-write.ts';
import { async } from '../envelope.ts';

const header = (c: Context<AppEnv>, name: string) => c.req.header(`x-svc-${name}`) ?? c.req.header(`x-lxd-${name}`);

/**
 * `POST /1.0/containers` with a backup tarball as the body (`lxc import`): the container described
 * by its backup/index.yaml is created (name overridable with X-SVC-name / X-LXD-name, root pool with
 * X-SVC-pool), and the reconciler unpacks the tarball into its root volume.
 */
export async function importBackup(c: Context<AppEnv>, deps: ApiDeps): Promise<Response> {
  const { db, stateDir } = deps;
  const project = c.get('project');
  const dir = path.dirname(importFileOf(stateDir, 'x'));
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const upload = path.join(dir, `.upload-${randomUUID()}`);
  try {
    if (!c.req.raw.body) throw new ValidationError('Empty body: expected a backup tarball');
    await pipeline(Readable.fromWeb(c.req.raw.body as import('node:stream/web').ReadableStream), createWriteStream(upload, { mode: 0o600 }));
    let index;
    try {
      index = await readBackupIndex(upload);
    } catch (e) {
      throw new ValidationError(`Invalid backup: ${(e as Error).message}`);
    }
    const saved = index.config.container as Partial<Record<'name' | 'description' | 'architecture' | 'ephemeral' | 'profiles' | 'config' | 'devices', unknown>>;
    const name = header(c, 'name') || index.name;
    const pool = header(c, 'pool');
    const devices = { ...((saved.devices as Record<string, Record<string, string>>) ?? {}) };
    if (pool) devices.root = { type: 'disk', path: '/', pool };
    const config = Object.fromEntries(Object.entries((saved.config as Record<string, string>) ?? {}).filter(([k]) => !k.startsWith('volatile.')));
    const input: ContainerInput = {
      description: typeof saved.description === 'string' ? saved.description : '',
      architecture: typeof saved.architecture === 'string' && saved.architecture ? saved.architecture : (deps.host.architectures[0] ?? 'x86_64'),
      ephemeral: saved.ephemeral === true,
      profiles: Array.isArray(saved.profiles) ? (saved.profiles as string[]) : ['default'],
      config,
      devices,
    };
    const pp = profileProjectOf(await readProject(db, project));
    await validateContainer(db, pp, input);
    // The tarball is in place before the row commits (the reconciler unpacks it as soon as it sees the row).
    const id = randomUUID();
    const file = importFileOf(stateDir, id);
    await rename(upload, file);
    try {
      const op = await writeWithOperation(deps, async (tx) => {
        await lockProfiles(tx, pp, input.profiles);
        const row = await insertContainer(tx, project, name, input, { type: 'backup', file }, 'stopped', id);
        return {
          operation: { class: 'task', description: 'Restoring container from backup', project, resources: { containers: [containerUrl(row)] } },
          target: { kind: CONTAINER_KIND, key: row.id, generation: row.generation },
        };
      });
      return async(c, op);
    } catch (e) {
      await rm(file, { force: true });
      throw e;
    }
  } finally {
    await rm(upload, { force: true });
  }
}
