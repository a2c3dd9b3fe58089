import { randomBytes } from 'node:crypto';

interface Entry {
  fingerprint: string;
  project: string;
  firstUse?: number;
  expired: Promise<void>;
  expire(): void;
}

/**
 * Image secrets: a guest holding one may read (GET, export) one private image. A secret stays
 * valid until `validMs` (5 s) after its first use, so a client can read the image and then export
 * it with the same secret; unused, it lasts until its operation is cancelled or svcd stops.
 */
export function createImageSecrets(opts: { validMs?: number; now?: () => number } = {}) {
  const validMs = opts.validMs ?? 5_000;
  const now = opts.now ?? Date.now;
  const entries = new Map<string, Entry>();

  return {
    /** A new secret for one image (of an image project); `expired` resolves when it stops being valid. */
    issue(fingerprint: string, project: string): { secret: string; expired: Promise<void>; revoke(): void } {
      const secret = randomBytes(32).toString('hex');
      let expire!: () => void;
      const expired = new Promise<void>((resolve) => (expire = resolve));
      const entry: Entry = { fingerprint, project, expired, expire: () => {} };
      entry.expire = () => {
        if (entries.get(secret) === entry) entries.delete(secret);
        expire();
      };
      entries.set(secret, entry);
      return { secret, expired, revoke: entry.expire };
    },

    /** Whether the secret grants this image now; the first use starts the 5 s countdown. */
    use(secret: string, fingerprint: string, project: string): boolean {
      const e = entries.get(secret);
      if (!e || e.fingerprint !== fingerprint || e.project !== project) return false;
      const t = now();
      if (e.firstUse === undefined) {
        e.firstUse = t;
        setTimeout(e.expire, validMs).unref();
      } else if (t - e.firstUse > validMs) {
        e.expire();
        return false;
      }
      return true;
    },

    get size() {
      return entries.size;
    },
  };
}
export type ImageSecrets = ReturnType<typeof createImageSecrets>;
