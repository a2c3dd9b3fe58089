import type { TemplateTrigger } from '../../desired/container-metadata.ts';
import type { ContainerRow } from '../../desired/schema/index.ts';
import type { RootfsFilesAdapter } from '../adapters.ts';
import { TerminalError } from '../runtime/index.ts';
import { parseBool } from '../../util/parse-bool.ts';

export interface ApplyTemplatesInput {
  files: RootfsFilesAdapter;
  /** The container volume: metadata.yaml, templates/, rootfs/. */
  volumeDir: string;
  rootfs: string;
  trigger: TemplateTrigger;
  container: ContainerRow;
  /** Expanded config and devices (what LXD passes to templates). */
  config: Record<string, string>;
  devices: Record<string, Record<string, string>>;
}

const truthy = (v: string | undefined) => parseBool(v);

/**
 * Render the container's templates for `trigger` into its (stopped) rootfs, as LXD does: each
 * template whose `when` has the trigger, into its target path (resolved inside the rootfs),
 * skipped when `create_only` and the file exists. New files belong to the container's root (svcd
 * writes as root; the rootfs is idmapped or the container privileged). Returns the targets
 * written. A missing template file or a template that does not render fails the container's
 * convergence (retrying would not help).
 */
export async function applyTemplates(input: ApplyTemplatesInput): Promise<string[]> {
  const metadata = await input.files.readMetadata(input.volumeDir);
  const c = input.container;
  const written: string[] = [];
  for (const [target, tpl] of Object.entries(metadata.templates).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    if (!tpl.when.includes(input.trigger)) continue;
    const fail = (why: string) =>
      new TerminalError(`template "${tpl.template}" for ${target} (${input.trigger}): ${why}`);
    if (tpl.create_only && (await input.files.existsInRoot(input.rootfs, target).catch(() => false))) continue;
    const source = await input.files.readTemplate(input.volumeDir, tpl.template);
    if (!source) throw fail('the template file is missing from templates/');
    const text = await input.files
      .renderTemplate(source.toString('utf8'), {
        trigger: input.trigger,
        path: target,
        container: {
          name: c.name,
          architecture: c.architecture,
          privileged: String(truthy(input.config['security.privileged'])),
          ephemeral: String(c.ephemeral),
        },
        config: input.config,
        devices: input.devices,
        properties: tpl.properties,
      })
      .catch((e: Error) => Promise.reject(fail(e.message)));
    await input.files.writeInRoot(input.rootfs, target, text).catch((e: Error) => Promise.reject(fail(e.message)));
    written.push(target);
  }
  return written;
}
