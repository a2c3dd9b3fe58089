import { boolean, index, jsonb, pgTable, text, timestamp, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { createdAt, generation, stringMap } from './columns.ts';

const deletingAt = () => timestamp('deleting_at', { withTimezone: true, mode: 'date' });

/** Desired storage pools. Delete sets deleting_at; the reconciler removes the row after teardown. One writer module: `desired/storage-pools.ts`. */
export const storagePools = pgTable('storage_pools', {
  name: text('name').primaryKey(),
  driver: text('driver').notNull(),
  description: text('description').notNull().default(''),
  config: stringMap('config'),
  /**
   * Member-specific keys (source, size...) by member name, once clustered; empty on a standalone server,
   * whose member keys stay in `config`.
   */
  memberConfig: jsonb('member_config').$type<Record<string, Record<string, string>>>().notNull().default({}),
  /**
   * Defined member by member (`POST ?target=`, LXD's two steps) and not yet created: nothing of it is on any
   * host, no reconciler or observer looks at it, and the members in `member_config` are those it is defined on.
   * Its second writer, desired/pool-pending.ts, writes only pending rows (each write conditional on `pending`),
   * and the one step that makes a pending row an ordinary pool; storage-pools.ts writes the rest.
   */
  pending: boolean('pending').notNull().default(false),
  generation: generation(),
  createdAt: createdAt(),
  deletingAt: deletingAt(),
});
export type StoragePoolRow = typeof storagePools.$inferSelect;

/**
 * Desired volumes. On the host a volume is stored under its stable `id`, so a rename is a pure
 * database change; moving to another pool changes `pool` and the reconciler moves the data.
 *
 * One writer module, `desired/storage-volumes.ts`: the API's custom volumes, and the rows of the volumes
 * the container reconciler makes (container root volumes, image volumes; recordContainerVolume,
 * ensureImageVolumeRow, deleteVolumeRow); and `desired/move-container-rows.ts`, which moves a container
 * volume's `location` with its container's, in the move's transaction.
 */
export const storageVolumes = pgTable(
  'storage_volumes',
  {
    id: uuid('id').primaryKey(),
    pool: text('pool')
      .notNull()
      .references(() => storagePools.name, { onUpdate: 'cascade' }),
    project: text('project').notNull().default('default'),
    type: text('type').notNull(),
    name: text('name').notNull(),
    description: text('description').notNull().default(''),
    config: stringMap('config'),
    /**
     * Populate from another volume (or one of its snapshots) when first created; `snapshots` maps
     * the source's snapshots to this volume's (a copy that keeps them).
     */
    source: jsonb('source').$type<{
      volumeId: string;
      snapshotId?: string;
      snapshots?: { from: string; to: string }[];
    } | null>(),
    /** Restore request: the reconciler restores when seq is newer than the last one it applied. */
    restore: jsonb('restore').$type<{ snapshotId: string; seq: number } | null>(),
    /** The member holding it (custom and container volumes); '' for image volumes, which every member keeps. */
    location: text('location').notNull().default(''),
    generation: generation(),
    createdAt: createdAt(),
    deletingAt: deletingAt(),
  },
  (t) => [
    uniqueIndex('storage_volumes_name_idx').on(t.pool, t.project, t.type, t.name),
    index('storage_volumes_pool_idx').on(t.pool),
  ],
);
export type StorageVolumeRow = typeof storageVolumes.$inferSelect;

/**
 * Custom volumes' snapshots. Two writer modules: `desired/volume-snapshots.ts` (the snapshot verbs), and
 * `desired/storage-volumes.ts`, which inserts a copy's snapshot rows in the transaction that inserts the
 * copy's volume row (one desired write: the copy with its snapshots).
 */
export const volumeSnapshots = pgTable(
  'volume_snapshots',
  {
    id: uuid('id').primaryKey(),
    volumeId: uuid('volume_id')
      .notNull()
      .references(() => storageVolumes.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    description: text('description').notNull().default(''),
    config: stringMap('config'),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    deletingAt: deletingAt(),
  },
  (t) => [uniqueIndex('volume_snapshots_name_idx').on(t.volumeId, t.name)],
);
export type VolumeSnapshotRow = typeof volumeSnapshots.$inferSelect;
