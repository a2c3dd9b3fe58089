import { HostInputError } from '../errors.ts';

/** The uploaded file is not a usable container backup (→ 400); the message says why. */
export class InvalidBackupError extends HostInputError {}
