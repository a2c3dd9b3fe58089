import { ValidationError } from '../desired/errors.ts';
import type { RemoteImageSource, RemoteProtocolName } from '../host/images/remote/remote-protocol.ts';

/** The source-image dict's fields, as a create body gives them (absent or null = not given). */
export interface RawRemoteSource {
  server?: string | null | undefined;
  protocol?: string | null | undefined;
  alias?: string | null | undefined;
  fingerprint?: string | null | undefined;
  secret?: string | null | undefined;
  certificate?: string | null | undefined;
}

/** `lxd` is LXD's name for the protocol svc speaks (what the lxc CLI sends for an LXD-type remote). */
const PROTOCOLS: Record<string, RemoteProtocolName> = {
  '': 'svc',
  svc: 'svc',
  lxd: 'svc',
  simplestreams: 'simplestreams',
};

/**
 * Check a source-image dict (mode pull): an absolute http(s) server URL, a known protocol, and
 * exactly one of alias and fingerprint. Bad input is a ValidationError (400).
 */
export function parseRemoteSource(raw: RawRemoteSource): RemoteImageSource {
  if (!raw.server) throw new ValidationError('Missing "source.server": the URL of the server to pull the image from');
  let url: URL;
  try {
    url = new URL(raw.server);
  } catch {
    throw new ValidationError(`Invalid "source.server": ${JSON.stringify(raw.server)} is not a URL`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw new ValidationError('Invalid "source.server": only https and http URLs are supported');
  const protocol = PROTOCOLS[raw.protocol ?? ''];
  if (!protocol)
    throw new ValidationError(`Invalid "source.protocol": "${raw.protocol}" is not one of svc, simplestreams (or lxd)`);
  if (raw.alias && raw.fingerprint)
    throw new ValidationError('Give only one of "source.alias" and "source.fingerprint"');
  if (!raw.alias && !raw.fingerprint)
    throw new ValidationError('Missing "source.alias" or "source.fingerprint": the image to pull');
  const server = raw.server.replace(/\/+$/, '');
  return {
    server,
    protocol,
    ...(raw.alias ? { alias: raw.alias } : {}),
    ...(raw.fingerprint ? { fingerprint: raw.fingerprint } : {}),
    ...(raw.secret ? { secret: raw.secret } : {}),
    ...(raw.certificate ? { certificate: raw.certificate } : {}),
  };
}

/** LXD's byte sizes (SI units, two decimals): 950B, 12.30MB. */
export function byteSize(n: number): string {
  if (n < 1000) return `${Math.round(n)}B`;
  let v = n;
  for (const unit of ['kB', 'MB', 'GB', 'TB', 'PB']) {
    v /= 1000;
    if (v < 1000) return `${v.toFixed(2)}${unit}`;
  }
  return `${v.toFixed(2)}EB`;
}

/** The text of `download_progress` (the key lxc shows while an image downloads): "45% (12.30MB/s)". */
export function progressText(received: number, total: number, elapsedMs: number): string {
  const rate = elapsedMs > 0 ? (received * 1000) / elapsedMs : 0;
  const percent = total > 0 ? Math.min(100, Math.floor((received * 100) / total)) : 0;
  return total > 0 ? `${percent}% (${byteSize(rate)}/s)` : `${byteSize(received)} (${byteSize(rate)}/s)`;
}
