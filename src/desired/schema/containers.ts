import {
  bigint,
  boolean,
  index,
  integer,
  jsonb,
  pgTable,
  text,
  timestamp,
  uniqueIndex,
  uuid,
} from 'drizzle-orm/pg-core';
import { createdAt, deviceMap, generation, stringMap } from './columns.ts';
import { projects } from './projects.ts';

export type DesiredPower = 'running' | 'stopped' | 'frozen';

/** Where a new container's root filesystem comes from. */
export type ContainerSource =
  | { type: 'image'; fingerprint: string }
  | { type: 'none' }
  | {
      type: 'copy';
      containerId: string;
      snapshot?: string;
      containerOnly?: boolean;
      /** The source's snapshots copied along (oldest first): source snapshot id → this container's. */
      snapshots?: { from: string; to: string }[];
    }
  | {
      /** Received from another server (src/migration): the volume and its snapshots are in place before the row. */
      type: 'migration';
    }
  | {
      type: 'backup';
      file: string;
      /** The snapshots packed in the tarball (oldest first): their directory `backup/snapshots/<name>` → this container's snapshot id. */
      snapshots?: { name: string; id: string }[];
    };

/**
 * The last state verb, kept as a level: `seq` grows with every PUT .../state, so the reconciler
 * can tell a new restart or a new forced stop from one it already carried out.
 */
export interface PowerRequest {
  action: 'start' | 'stop' | 'restart' | 'freeze' | 'unfreeze';
  force: boolean;
  /** Seconds to wait for a clean stop before giving up (-1: the default). */
  timeout: number;
  seq: number;
}

/**
 * Desired containers. On the host a container is known by its stable `id` (LXC name and storage
 * path), so a rename is a database change; `name` is what users and the hostname see.
 *
 * Writers: every write goes through `desired/containers.ts` (the API, the boot plan's autostart verdict,
 * the observer's power-off and ephemeral retirement, the reconciler's final delete), except one:
 * `desired/profiles.ts` bumps the generation of the containers using a profile, in the profile write's
 * transaction. Safe together: each write bumps `generation`, and the observer's writes are conditional on
 * the generation it read (`bumpIfUnchanged`), so a newer desire is never overwritten. A move between
 * members (`desired/move-container-rows.ts`) changes `location` conditional on the generation too.
 */
export const containers = pgTable(
  'containers',
  {
    id: uuid('id').primaryKey(),
    project: text('project')
      .notNull()
      .references(() => projects.name, { onUpdate: 'cascade' }),
    name: text('name').notNull(),
    description: text('description').notNull().default(''),
    architecture: text('architecture').notNull(),
    ephemeral: boolean('ephemeral').notNull().default(false),
    profiles: jsonb('profiles').$type<string[]>().notNull().default([]),
    config: stringMap('config'),
    devices: deviceMap('devices'),
    source: jsonb('source').$type<ContainerSource>().notNull(),
    /** Explicit desired power state: set by start/stop/restart/freeze, never inferred. */
    power: text('power').$type<DesiredPower>().notNull().default('stopped'),
    powerRequest: jsonb('power_request').$type<PowerRequest | null>(),
    /** Restore request: the reconciler restores the snapshot when seq is newer than the last it applied. */
    restore: jsonb('restore').$type<{ snapshotId: string; seq: number } | null>(),
    /** Block of the host id range for security.idmap.isolated, allocated at create. */
    idmapIndex: integer('idmap_index').notNull().default(0),
    /** The member that holds it (its name); only that member reconciles it. '' until a member adopts it. */
    location: text('location').notNull().default(''),
    generation: generation(),
    createdAt: createdAt(),
    lastUsedAt: timestamp('last_used_at', { withTimezone: true, mode: 'date' }),
    deletingAt: timestamp('deleting_at', { withTimezone: true, mode: 'date' }),
  },
  (t) => [
    uniqueIndex('containers_name_idx').on(t.project, t.name),
    index('containers_project_idx').on(t.project),
    index('containers_location_idx').on(t.location),
  ],
);
export type ContainerRow = typeof containers.$inferSelect;

/**
 * What LXC shows of each container on this member. One writer module, `desired/container-runtime.ts`:
 * the container observer records its looks; the container reconciler deletes the row of a container it
 * removed, after its teardown (the observer no longer looks at a container marked for deletion).
 */
export const containerRuntime = pgTable('container_runtime', {
  id: uuid('id').primaryKey(),
  node: text('node').notNull(),
  /** LXC state: RUNNING, STOPPED, FROZEN, STARTING, STOPPING, ABORTING, FREEZING, THAWED. */
  state: text('state').notNull(),
  pid: integer('pid').notNull().default(0),
  startedAt: timestamp('started_at', { withTimezone: true, mode: 'date' }),
  processes: integer('processes').notNull().default(0),
  cpuNs: bigint('cpu_ns', { mode: 'number' }).notNull().default(0),
  memory: bigint('memory', { mode: 'number' }).notNull().default(0),
  observedAt: timestamp('observed_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
});
export type ContainerRuntimeRow = typeof containerRuntime.$inferSelect;

/**
 * Container snapshots: the root volume's snapshot plus the container's configuration at that time.
 * Writers: `desired/container-snapshots.ts`; and `desired/profiles.ts`, which renames a profile in the
 * snapshots that name it, in the rename's own transaction (one statement, the same rename as the containers').
 */
export const containerSnapshots = pgTable(
  'container_snapshots',
  {
    id: uuid('id').primaryKey(),
    containerId: uuid('container_id')
      .notNull()
      .references(() => containers.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    architecture: text('architecture').notNull(),
    ephemeral: boolean('ephemeral').notNull().default(false),
    profiles: jsonb('profiles').$type<string[]>().notNull().default([]),
    config: stringMap('config'),
    devices: deviceMap('devices'),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    deletingAt: timestamp('deleting_at', { withTimezone: true, mode: 'date' }),
  },
  (t) => [uniqueIndex('container_snapshots_name_idx').on(t.containerId, t.name)],
);
export type ContainerSnapshotRow = typeof containerSnapshots.$inferSelect;
