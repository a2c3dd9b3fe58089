/**
 * `api_extensions`: only what really works, in the spec's order, plus `api_filtering` (which the
 * lxc CLI requires). Each issue adds its names here when its integration tests pass.
 */
export const API_EXTENSIONS = [
  'container_last_used_at',
  'etag',
  'patch',
  'https_allowed_credentials',
  'profile_usedby',
  'storage',
  'certificate_update',
  'container_cpu_time',
  'container_backup',
  'entity_description',
  'image_compression_algorithm',
  'image_create_aliases',
  'storage_rsync_bwlimit',
  'storage_btrfs_mount_options',
  'instance_types',
  'storage_volatile_initial_source',
  'resources',
  'storage_api_volume_rename',
  'storage_api_local_volume_handling',
  'operation_description',
  'event_lifecycle',
  'storage_api_volume_snapshots',
  'storage_unmapped',
  'projects',
  'container_protection_delete',
  'api_filtering',
] as const;
