/** A container's metadata as desired state: the format is the host's (host/templates/metadata-format.ts); a client's is validated here. */
import { normalizeContainerMetadata, type ContainerMetadata } from '../host/templates/metadata-format.ts';
import { ValidationError } from './errors.ts';

export {
  isTemplateName,
  isTemplateTarget,
  readableContainerMetadata,
  TEMPLATE_TRIGGERS,
  type ContainerMetadata,
  type TemplateSpec,
  type TemplateTrigger,
} from '../host/templates/metadata-format.ts';

/** A metadata object from a client (PUT): every problem is a ValidationError. */
export function parseContainerMetadata(doc: unknown): ContainerMetadata {
  return normalizeContainerMetadata(doc, (message) => {
    throw new ValidationError(message);
  });
}
