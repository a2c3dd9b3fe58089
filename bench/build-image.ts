/**
 * Build the tiny busybox image api-bench uses (unified, gzip) into a directory and print its path,
 * so one image file can be uploaded to several servers:
 *   node --import tsx bench/build-image.ts <dir>
 */
import { buildBusyboxImage } from '../integration/support/busybox-image.ts';

const dir = process.argv[2];
if (!dir) {
  process.stderr.write('usage: node --import tsx bench/build-image.ts <dir>\n');
  process.exit(2);
}
const img = await buildBusyboxImage({ dir, format: 'unified', compression: 'gzip' });
if (img.format !== 'unified') throw new Error('expected a unified image');
process.stdout.write(`${img.file}\n`);
