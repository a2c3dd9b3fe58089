import path from 'node:path';

/** Where every container's guest socket directory lives on the host. */
export const devsvcRootOf = (stateDir: string) => path.join(stateDir, 'devsvc');

/**
 * One directory per container, holding its socket `sock`. The directory (not the socket) is
 * bind-mounted into the container, so a socket created again in it (after a daemon restart) is
 * visible inside without touching the container's mounts.
 */
export const devsvcDirOf = (stateDir: string, id: string) => path.join(devsvcRootOf(stateDir), id);

export const DEVSVC_SOCKET = 'sock';

/**
 * Where the directory appears inside the container: svcd's own name, and LXD's, where guest
 * tools (cloud-init, lxd-agent clients) look for `sock`.
 */
export const DEVSVC_TARGETS = ['/dev/svc', '/dev/lxd'] as const;
