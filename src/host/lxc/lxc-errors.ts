/**
 * The errors LXC's runners throw, in a module of their own (no commands, no host access), so code that
 * only classifies them (the container reconciler) need not import the runners.
 */

/** lxc-start failed or the container did not reach RUNNING; carries the tail of the LXC log written by this attempt. */
export class ContainerStartError extends Error {
  constructor(
    message: string,
    readonly logTail: string,
    options?: { cause?: unknown },
  ) {
    super(logTail ? `${message}\n--- lxc log ---\n${logTail}` : message, options);
    this.name = 'ContainerStartError';
  }
}

/** A cgroup write the kernel refused: which key, which value, and why. */
export class CgroupWriteError extends Error {
  constructor(
    readonly key: string,
    readonly file: string,
    readonly code: string | undefined,
    message: string,
  ) {
    super(message);
    this.name = 'CgroupWriteError';
  }
}

/** The mount helper live device changes go through is not built. */
export class MountHelperMissingError extends Error {
  constructor(file: string) {
    super(
      `the mount helper ${file} is not built (run scripts/install-deps.sh): devices cannot be added to or removed from running containers`,
    );
    this.name = 'MountHelperMissingError';
  }
}
