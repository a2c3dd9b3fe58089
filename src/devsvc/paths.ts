export const DEVSVC_SOCKET = 'sock';

/**
 * Where the directory appears inside the container: svcd's own name, and LXD's, where guest
 * tools (cloud-init, lxd-agent clients) look for `sock`.
 */
export const DEVSVC_TARGETS = ['/dev/svc', '/dev/lxd'] as const;
