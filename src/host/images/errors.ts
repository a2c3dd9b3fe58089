import { HostInputError } from '../errors.ts';

/** The uploaded or downloaded files are not a usable image (→ 400); the message says why. */
export class InvalidImageError extends HostInputError {}
