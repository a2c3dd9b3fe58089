/** A container's idmap settings cannot be satisfied by this host's subordinate id ranges (a config problem, not transient). */
export class IdmapError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'IdmapError';
  }
}
