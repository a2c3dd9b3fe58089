/**
 * `api_extensions`: only what really works, in the spec's order, plus `api_filtering` (which the
 * lxc CLI requires). Each issue adds its names here when its integration tests pass.
 */
export const API_EXTENSIONS = [
  'etag',
  'patch',
  'https_allowed_credentials',
  'profile_usedby',
  'certificate_update',
  'entity_description',
  'resources',
  'operation_description',
  'event_lifecycle',
  'projects',
  'api_filtering',
] as const;
