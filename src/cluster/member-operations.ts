import { requestMember } from './member-client.ts';

/** Another member reached as the cluster (its address, the cluster certificate pinned and presented). */
export interface MemberEndpoint {
  address: string;
  cert: { cert: string; key: string; fingerprint: string };
  /** This member's name (the forwarded header: the other member serves the request itself). */
  from: string;
}

interface Envelope {
  type?: string;
  error?: string;
  metadata?: { id?: string; status?: string; err?: string } & Record<string, unknown>;
}

/** One JSON request to a member; an error envelope throws with its message. */
export async function callMemberJson(
  to: MemberEndpoint,
  method: string,
  path: string,
  body?: unknown,
  timeoutMs?: number,
): Promise<Envelope> {
  const res = await requestMember({
    address: to.address,
    pin: to.cert.fingerprint,
    client: to.cert,
    method,
    path,
    headers: { 'x-svcd-forwarded': to.from, 'content-type': 'application/json' },
    body: body === undefined ? undefined : Buffer.from(JSON.stringify(body)),
    ...(timeoutMs ? { timeoutMs } : {}),
  });
  let env: Envelope;
  try {
    env = JSON.parse(res.body.toString()) as Envelope;
  } catch {
    throw new Error(`${method} ${path} on ${to.address} answered ${res.status} without JSON`);
  }
  if (res.status >= 400 || env.type === 'error') throw new Error(env.error || `${method} ${path}: ${res.status}`);
  return env;
}

/** Start an operation on a member and wait for its end; a Failure throws with its `err`. */
export async function runMemberOperation(
  to: MemberEndpoint,
  method: string,
  path: string,
  body: unknown,
  onStarted?: (id: string) => void,
): Promise<void> {
  const started = await callMemberJson(to, method, path, body);
  const id = started.metadata?.id;
  if (!id) throw new Error(`${method} ${path} on ${to.address} answered no operation`);
  onStarted?.(id);
  const end = await callMemberJson(to, 'GET', `/1.0/operations/${id}/wait?timeout=-1`, undefined, 24 * 3600_000);
  if (end.metadata?.status !== 'Success')
    throw new Error(end.metadata?.err || `operation ${id} ended ${end.metadata?.status}`);
}
