/**
 * Is a failed host command worth retrying? Each tool svcd runs has a classifier here, decided from
 * its exit code and standard error: *terminal* when running it again on the same input gives the
 * same failure (a corrupt archive, an option the kernel refuses, a missing tool), *transient* when
 * the host may change under it (no space left, busy, out of memory, a timeout). The reconcile manager
 * retries transient failures with backoff and ends operations at once on terminal ones.
 */

export type FailureKind = 'terminal' | 'transient';

/** What is known of a failed run. */
export interface CommandFailure {
  /** undefined: killed by a signal, or never started. */
  exitCode: number | undefined;
  stderr: string;
  timedOut?: boolean;
  canceled?: boolean;
  /** The command could not be started at all (not installed, not executable). */
  notStarted?: boolean;
}

export type FailureClassifier = (f: CommandFailure) => FailureKind;

/** Conditions of the host, not of the input: any tool failing with one of these may succeed later. */
const HOST_CONDITIONS = [
  /No space left on device/i,
  /Disk quota exceeded/i,
  /Cannot allocate memory|Out of memory/i,
  /Too many open files/i,
  /Resource temporarily unavailable/i,
  /Device or resource busy|target is busy/i,
  /Input\/output error/i,
  /Interrupted system call/i,
  /Stale file handle/i,
];

const matchesAny = (text: string, patterns: readonly RegExp[]) => patterns.some((p) => p.test(text));

/**
 * A classifier from patterns: the host conditions above, a timeout, a cancellation or a kill by a
 * signal are transient; a command that could not be started is terminal (host support is missing);
 * then `terminal` / `transient` patterns on stderr, then exit codes, then `fallback`.
 */
export function classifierOf(rules: {
  terminal?: readonly RegExp[];
  transient?: readonly RegExp[];
  terminalExitCodes?: readonly number[];
  transientExitCodes?: readonly number[];
  fallback: FailureKind;
}): FailureClassifier {
  return (f) => {
    if (f.timedOut || f.canceled) return 'transient';
    if (f.notStarted) return 'terminal';
    if (f.exitCode === undefined) return 'transient';
    if (matchesAny(f.stderr, HOST_CONDITIONS)) return 'transient';
    if (rules.transient && matchesAny(f.stderr, rules.transient)) return 'transient';
    if (rules.terminal && matchesAny(f.stderr, rules.terminal)) return 'terminal';
    if (rules.terminalExitCodes?.includes(f.exitCode)) return 'terminal';
    if (rules.transientExitCodes?.includes(f.exitCode)) return 'transient';
    return rules.fallback;
  };
}

/** Archive damage as GNU tar and the decompressors it runs report it. */
const CORRUPT_ARCHIVE = [
  /Unexpected EOF in archive/i,
  /not in gzip format/i,
  /This does not look like a tar archive/i,
  /Skipping to next header/i,
  /Archive contains obsolescent base-64 headers/i,
  /invalid compressed data|crc error|unexpected end of file/i,
  /File format not recognized|Compressed data is corrupt|Unexpected end of input/i,
  /Data integrity error|Unknown frame descriptor|Read error \(39\)/i,
  /Member name contains '\.\.'/i,
  /Cannot hard link to/i,
  /Cannot open: No such file or directory/i,
  /Error is not recoverable/i,
];

/**
 * The table: one classifier per tool the reconcilers (and the routes' services) run. docs/architecture.md lists
 * the same decisions. A tool missing here is judged transient (the safe default: retried with backoff
 * until the operation's deadline).
 */
export const FAILURE_CLASSIFIERS: Record<string, FailureClassifier> = {
  // Extracting image and backup tarballs: exit 2 is a fatal error; what is left once the host
  // conditions are ruled out is the archive itself (corrupt, cut short, a member tar refuses).
  tar: classifierOf({ terminal: CORRUPT_ARCHIVE, fallback: 'terminal' }),
  // A squashfs rootfs: a bad superblock or block is the file's fault.
  unsquashfs: classifierOf({
    terminal: [/FATAL ERROR|Can't find a SQUASHFS superblock|corrupt|read_block: failed/i],
    fallback: 'terminal',
  }),
  // Decompressors of image uploads (streamed): a format error is the file's.
  xz: classifierOf({ terminal: CORRUPT_ARCHIVE, fallback: 'terminal' }),
  bzip2: classifierOf({ terminal: CORRUPT_ARCHIVE, fallback: 'terminal' }),
  zstd: classifierOf({ terminal: CORRUPT_ARCHIVE, fallback: 'terminal' }),
  // Volume copies: a missing source or a full pool come and go (a concurrent delete, space freed).
  cp: classifierOf({ terminal: [/invalid option|unrecognized option/i], fallback: 'transient' }),
  // rsync: 1 syntax, 2 protocol incompatibility, 4 unsupported action are svcd's or the host's
  // setup; I/O errors (11), partial transfers (23, 24), signals and timeouts may pass.
  rsync: classifierOf({ terminalExitCodes: [1, 2, 4], fallback: 'transient' }),
  // btrfs: a path that is not on btrfs, or an ioctl the kernel lacks, stays so.
  btrfs: classifierOf({
    terminal: [/not a btrfs|Inappropriate ioctl for device|Operation not supported|Invalid argument/i],
    fallback: 'transient',
  }),
  'mkfs.btrfs': classifierOf({ terminal: [/too small|invalid|unrecognized option/i], fallback: 'transient' }),
  // mount: 32 is "mount failure"; a file system type or option the kernel refuses stays refused.
  mount: classifierOf({
    terminal: [/unknown filesystem type|wrong fs type, bad option, bad superblock|bad option|Invalid argument/i],
    terminalExitCodes: [1],
    fallback: 'transient',
  }),
  umount: classifierOf({ terminalExitCodes: [1], fallback: 'transient' }),
  // losetup: a missing backing file is the pool's configuration; no free loop device may pass.
  losetup: classifierOf({ terminal: [/No such file or directory|Invalid argument/i], fallback: 'transient' }),
  blkid: classifierOf({ fallback: 'transient' }),
  // Project quotas: a file system without them stays without them.
  chattr: classifierOf({
    terminal: [/Operation not supported|Inappropriate ioctl for device|Invalid argument/i],
    fallback: 'transient',
  }),
  setquota: classifierOf({
    terminal: [/not supported|Cannot find mountpoint|No such file or directory|Invalid argument/i],
    fallback: 'transient',
  }),
  // Device nodes: refused numbers or a file system that forbids nodes (nodev) stay so.
  mknod: classifierOf({
    terminal: [/invalid (major|minor)|Operation not permitted|Invalid argument/i],
    fallback: 'transient',
  }),
  // lxc-start: LXC refused the container's config (the reconciler wraps it as a ContainerStartError).
  'lxc-start': classifierOf({ fallback: 'terminal' }),
  // Stop, freeze, state and listing: the container or LXC's monitor is in the middle of something.
  'lxc-stop': classifierOf({ fallback: 'transient' }),
  'lxc-freeze': classifierOf({ fallback: 'transient' }),
  'lxc-unfreeze': classifierOf({ fallback: 'transient' }),
  'lxc-info': classifierOf({ fallback: 'transient' }),
  'lxc-ls': classifierOf({ fallback: 'transient' }),
  'lxc-attach': classifierOf({ fallback: 'transient' }),
};

const DEFAULT_CLASSIFIER = classifierOf({ fallback: 'transient' });

/** The tool's classifier (by the file's base name); transient-by-default for tools not in the table. */
export function classifierFor(file: string): FailureClassifier {
  const base = file.slice(file.lastIndexOf('/') + 1);
  return FAILURE_CLASSIFIERS[base] ?? DEFAULT_CLASSIFIER;
}

/** Classify a failed run of `file` (or with an explicit classifier). */
export function classifyFailure(file: string, f: CommandFailure, classifier?: FailureClassifier): FailureKind {
  return (classifier ?? classifierFor(file))(f);
}
