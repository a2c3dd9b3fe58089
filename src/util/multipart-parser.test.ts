import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { boundaryOf, MultipartError, parseDisposition, readMultipart, type PartInfo } from './multipart-parser.ts';

async function* chunked(buf: Buffer, size: number) {
  for (let i = 0; i < buf.length; i += size) yield buf.subarray(i, i + size);
}

async function parse(body: Buffer, boundary: string, chunk: number) {
  const parts: { info: PartInfo; data: Buffer }[] = [];
  let cur: Buffer[] = [];
  await readMultipart(chunked(body, chunk), boundary, {
    async onPart(info) {
      parts.push({ info, data: Buffer.alloc(0) });
      cur = [];
    },
    async onData(c) {
      cur.push(Buffer.from(c));
    },
    async onPartEnd() {
      parts[parts.length - 1]!.data = Buffer.concat(cur);
    },
  });
  return parts;
}

/** A body as Go's mime/multipart writer makes it (the lxc CLI's split upload). */
function goBody(boundary: string, parts: [string, string, Buffer][]): Buffer {
  const out: Buffer[] = [];
  parts.forEach(([name, filename, data], i) => {
    out.push(
      Buffer.from(
        `${i ? '\r\n' : ''}--${boundary}\r\nContent-Disposition: form-data; name="${name}"; filename="${filename}"\r\nContent-Type: application/octet-stream\r\n\r\n`,
      ),
      data,
    );
  });
  out.push(Buffer.from(`\r\n--${boundary}--\r\n`));
  return Buffer.concat(out);
}

test('boundaryOf reads the boundary of multipart/form-data only', () => {
  assert.equal(boundaryOf('multipart/form-data; boundary=abc123'), 'abc123');
  assert.equal(boundaryOf('Multipart/Form-Data;boundary="a b\\"c"'), 'a b"c');
  assert.equal(boundaryOf('multipart/form-data'), undefined);
  assert.equal(boundaryOf('application/octet-stream; boundary=x'), undefined);
  assert.equal(boundaryOf(undefined), undefined);
});

test('parseDisposition handles quoted, escaped and bare values', () => {
  assert.deepEqual(parseDisposition('form-data; name="metadata"; filename="m \\"x\\".tar"'), {
    name: 'metadata',
    filename: 'm "x".tar',
  });
  assert.deepEqual(parseDisposition('attachment; filename=a.tar.gz'), { filename: 'a.tar.gz' });
});

test('parts arrive whole whatever the chunking, binary data with CR/LF and near-delimiters kept', async () => {
  const boundary = randomBytes(16).toString('hex');
  const meta = Buffer.concat([Buffer.from(`\r\n--${boundary.slice(0, 10)}\r\n--`), randomBytes(3000)]);
  const rootfs = Buffer.concat([randomBytes(70_000), Buffer.from('\r\n-'), randomBytes(10)]);
  const body = goBody(boundary, [
    ['metadata', 'meta.tar.xz', meta],
    ['rootfs', 'rootfs.tar', rootfs],
  ]);
  for (const size of [1, 7, 64, 4096, 65536, body.length]) {
    const parts = await parse(body, boundary, size);
    assert.deepEqual(
      parts.map((p) => [p.info.name, p.info.filename]),
      [
        ['metadata', 'meta.tar.xz'],
        ['rootfs', 'rootfs.tar'],
      ],
      `chunk ${size}`,
    );
    assert.ok(parts[0]!.data.equals(meta), `metadata intact with chunk ${size}`);
    assert.ok(parts[1]!.data.equals(rootfs), `rootfs intact with chunk ${size}`);
  }
});

test('a preamble and an epilogue are ignored; empty parts are fine', async () => {
  const body = Buffer.from(
    'preamble line\r\n--b\r\nContent-Disposition: form-data; name="a"\r\n\r\n\r\n--b--\r\nepilogue',
  );
  const parts = await parse(body, 'b', 3);
  assert.equal(parts.length, 1);
  assert.equal(parts[0]!.data.length, 0);
});

test('truncated or malformed bodies are MultipartErrors', async () => {
  const boundary = 'xyz';
  const full = goBody(boundary, [['metadata', 'm', Buffer.from('hello')]]);
  await assert.rejects(parse(full.subarray(0, full.length - 10), boundary, 5), MultipartError);
  await assert.rejects(
    parse(Buffer.from('--xyz\r\nno colon here\r\n\r\ndata\r\n--xyz--'), boundary, 4),
    MultipartError,
  );
  await assert.rejects(
    parse(Buffer.from('--xyz\r\nContent-Type: text/plain\r\n\r\ndata\r\n--xyz--'), boundary, 4),
    MultipartError,
  );
  await assert.rejects(parse(Buffer.from('not multipart at all'), boundary, 4), MultipartError);
});
