import type { Context } from 'hono';
import { NotFoundError } from '../../desired/errors.ts';
import { imageProjectFor, readImage } from '../../desired/images.ts';
import type { ImageAliasRow, ImageRow } from '../../desired/schema/index.ts';
import { emitLifecycle } from '../../events/index.ts';
import type { AppEnv } from '../context.ts';
import type { ApiDeps } from '../deps.ts';
import type { ImageHost } from '../host-service.ts';
import type { ImageSecrets } from './image-secrets.ts';

/** What the image route files share. */
export interface ImageRoutesContext {
  deps: ApiDeps;
  store: ImageHost;
  secrets: ImageSecrets;
}

const UNSET = '1970-01-01T00:00:00Z';
const stamp = (d: Date | null | undefined) => (d ? d.toISOString() : UNSET);

const projectQuery = (c: Context<AppEnv>) => {
  const project = c.get('project');
  return project === 'default' ? '' : `?project=${encodeURIComponent(project)}`;
};

export const imageUrl = (c: Context<AppEnv>, fingerprint: string) => `/1.0/images/${fingerprint}${projectQuery(c)}`;
export const aliasUrl = (c: Context<AppEnv>, name: string) =>
  `/1.0/images/aliases/${encodeURIComponent(name)}${projectQuery(c)}`;

/** The image object of the spec (plus `type`, which the lxc CLI lists). */
export function renderImage(img: ImageRow, aliases: ImageAliasRow[]) {
  return {
    fingerprint: img.fingerprint,
    filename: img.filename,
    architecture: img.architecture,
    aliases: aliases.map((a) => ({ name: a.name, description: a.description })),
    auto_update: img.autoUpdate,
    cached: img.cached,
    properties: img.properties,
    public: img.public,
    size: img.size,
    type: img.type,
    update_source: img.updateSource ?? null,
    created_at: stamp(img.createdAt),
    expires_at: stamp(img.expiresAt),
    last_used_at: stamp(img.lastUsedAt),
    uploaded_at: stamp(img.uploadedAt),
  };
}

export const renderAlias = (a: ImageAliasRow) => ({
  name: a.name,
  description: a.description,
  target: a.fingerprint,
  type: 'container',
});

export const isTrusted = (c: Context<AppEnv>) => c.get('caller').level === 'trusted';

/**
 * An image as the caller may see it: trusted callers see every image of the project; others see
 * public images, or a private one with a valid `?secret=` (which a given secret also uses up for
 * trusted callers). What may not be seen is "not found", as for a missing image.
 */
export async function visibleImage(
  ictx: ImageRoutesContext,
  c: Context<AppEnv>,
  fingerprint: string,
): Promise<ImageRow> {
  const { db } = ictx.deps;
  const project = c.get('project');
  const secret = c.req.query('secret');
  const trusted = isTrusted(c);
  const img = await readImage(db, project, fingerprint, { publicOnly: !trusted && !secret });
  if (secret && ictx.secrets.use(secret, img.fingerprint, await imageProjectFor(db, project))) return img;
  if (trusted || img.public) return img;
  throw new NotFoundError('Image not found');
}

/** X-SVC-<name> or its X-LXD-<name> alias (header names are case-insensitive). */
export function uploadHeader(c: Context<AppEnv>, name: string): string | undefined {
  return c.req.header(`x-svc-${name}`) ?? c.req.header(`x-lxd-${name}`);
}

export function imageLifecycle(
  ictx: ImageRoutesContext,
  c: Context<AppEnv>,
  action: string,
  source: string,
  context: Record<string, unknown> = {},
): void {
  emitLifecycle(ictx.deps.bus, { action, source, project: c.get('project'), context });
}
