import { ValidationError } from '../../desired/errors.ts';

/** The uploaded file is not a usable container backup (→ 400); the message says why. */
export class InvalidBackupError extends ValidationError {}
