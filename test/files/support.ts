import { request } from "node:http";
import { connect } from "node:net";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { crc32, deflateSync } from "node:zlib";
import { basic, KEY_ACME } from "../support/service.js";
import { ParamBuilder } from "../../services/store/sql.js";
import { storeOn } from "../support/database.js";

/** One part of a multipart form: a text field, or a file (bytes with a file name). */
export type FormPart = [name: string, value: string] | [name: string, value: Uint8Array, filename: string];

/** POSTs a multipart/form-data body with the parts in the order given. */
export function postForm(url: string, parts: readonly FormPart[], key = KEY_ACME): Promise<Response> {
  const form = new FormData();
  for (const [name, value, filename] of parts) {
    if (typeof value === "string") form.append(name, value);
    else form.append(name, new Blob([new Uint8Array(value)], { type: "application/octet-stream" }), filename ?? "blob");
  }
  return fetch(url, { method: "POST", headers: { authorization: basic(key) }, body: form });
}

/** Uploads `content` as /file/create does and answers the parsed body (throws unless 200). */
export async function uploadFile(baseUrl: string, project: string, content: Uint8Array, path = "/file/create"): Promise<{ digest: string }> {
  const res = await postForm(`${baseUrl}${path}`, [["project_id", project], ["file", content, "data.bin"]]);
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${path} answered ${res.status}: ${text}`);
  return JSON.parse(text) as { digest: string };
}

/** /file/content's status, content type and bytes. */
export async function readContent(baseUrl: string, project: string, digest: string, path = "/file/content", key = KEY_ACME) {
  const res = await fetch(`${baseUrl}${path}`, {
    method: "POST",
    headers: { authorization: basic(key), "content-type": "application/json" },
    body: JSON.stringify({ project_id: project, digest }),
  });
  return { status: res.status, type: res.headers.get("content-type"), length: res.headers.get("content-length"), bytes: Buffer.from(await res.arrayBuffer()) };
}

/** What the service's database holds for a project: recorded files and chunks not tombstoned. */
export async function storedFor(database: string, project: string): Promise<{ files: number; liveChunks: number }> {
  const store = await storeOn(database);
  try {
    const count = async (sql: (p: string) => string) => {
      const pb = new ParamBuilder();
      const rows = await store.rows<{ n: string }>("test_files_count", { sql: sql(pb.str(project)), params: pb.params });
      return Number(rows[0]?.n ?? 0);
    };
    return {
      files: await count((p) => `SELECT count() AS n FROM files WHERE project_id = ${p}`),
      liveChunks: await count((p) => `SELECT count() AS n FROM file_chunks FINAL WHERE project_id = ${p} AND deleted = 0`),
    };
  } finally {
    await store.close();
  }
}

function pngChunk(type: string, data: Uint8Array): Buffer {
  const body = Buffer.concat([Buffer.from(type, "latin1"), data]);
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([length, body, crc]);
}

/** A valid 1×1 grey PNG: signature, IHDR, IDAT (one filtered scanline), IEND. */
export function tinyPng(): Buffer {
  const ihdr = Buffer.from([0, 0, 0, 1, 0, 0, 0, 1, 8, 0, 0, 0, 0]);
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    pngChunk("IHDR", ihdr),
    pngChunk("IDAT", deflateSync(Buffer.from([0, 0x80]))),
    pngChunk("IEND", new Uint8Array(0)),
  ]);
}

/** A JPEG's framing: SOI, an APP0 JFIF segment, EOI. */
export function tinyJpeg(): Buffer {
  const app0 = [0xff, 0xe0, 0x00, 0x10, ...Buffer.from("JFIF\0", "latin1"), 1, 1, 0, 0, 1, 0, 1, 0, 0];
  return Buffer.from([0xff, 0xd8, ...app0, 0xff, 0xd9]);
}

/** A 1×1 GIF89a: screen descriptor, a 2-colour table, one image, trailer. */
export function tinyGif(): Buffer {
  return Buffer.from([
    ...Buffer.from("GIF89a", "latin1"), 1, 0, 1, 0, 0x80, 0, 0, 0xff, 0xff, 0xff, 0, 0, 0,
    0x2c, 0, 0, 0, 0, 1, 0, 1, 0, 0, 2, 2, 0x44, 0x01, 0, 0x3b,
  ]);
}

/** A RIFF/WEBP container whose VP8L chunk holds the header of a 1×1 image (signature byte, then 14-bit width-1 and height-1). */
export function tinyWebp(): Buffer {
  const payload = Buffer.from([0x2f, 0, 0, 0, 0]);
  const chunk = Buffer.concat([Buffer.from("VP8L", "latin1"), Buffer.alloc(4), payload, Buffer.alloc(payload.length % 2)]);
  chunk.writeUInt32LE(payload.length, 4);
  const riff = Buffer.concat([Buffer.from("RIFF", "latin1"), Buffer.alloc(4), Buffer.from("WEBP", "latin1"), chunk]);
  riff.writeUInt32LE(riff.length - 8, 4);
  return riff;
}

const BOUNDARY = "tracehouse-test-boundary-7f3a";

/**
 * POSTs /file/create with a body written as it is sent: the project_id part, then the file
 * part whose bytes come from `content` (never held whole), then the closing boundary. Uses
 * node:http: fetch keeps every piece of a streamed request body until the request is done.
 * When the service answers before the body is sent (413) and closes the connection, the
 * answer is what counts and the failed rest of the write is ignored.
 */
export function streamUpload(baseUrl: string, project: string, content: AsyncIterable<Uint8Array>): Promise<{ status: number; body: unknown }> {
  async function* body(): AsyncGenerator<Uint8Array> {
    yield formHead(project);
    yield* content;
    yield FORM_TAIL;
  }
  return new Promise((resolve, reject) => {
    const req = request(`${baseUrl}/file/create`, {
      method: "POST",
      agent: false,
      headers: { authorization: basic(KEY_ACME), "content-type": `multipart/form-data; boundary=${BOUNDARY}` },
    });
    let answered = false;
    req.on("response", (res) => {
      answered = true;
      const pieces: Buffer[] = [];
      res.on("data", (piece: Buffer) => pieces.push(piece));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(pieces).toString("utf8")) as unknown }));
      res.on("error", reject);
    });
    pipeline(Readable.from(body()), req).catch((err: unknown) => answered || reject(err));
  });
}

const formHead = (project: string) =>
  Buffer.from(
    `--${BOUNDARY}\r\nContent-Disposition: form-data; name="project_id"\r\n\r\n${project}\r\n` +
      `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="big.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`,
  );
const FORM_TAIL = Buffer.from(`\r\n--${BOUNDARY}--\r\n`);

/**
 * Uploads `content` as a client that writes its whole request before it reads anything
 * (as Python's `requests` does), over a raw socket; the body is framed by Content-Length or
 * sent in one chunk. Answers the status line, the Connection header and the parsed body, or
 * the socket error that ended the exchange first.
 */
export function sendWholeThenRead(
  baseUrl: string,
  project: string,
  content: Buffer,
  framing: "length" | "chunked",
): Promise<{ status: number; connection: string | undefined; body: unknown } | { error: string }> {
  const body = Buffer.concat([formHead(project), content, FORM_TAIL]);
  const url = new URL(baseUrl);
  const head =
    `POST /file/create HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: ${basic(KEY_ACME)}\r\n` +
    `Content-Type: multipart/form-data; boundary=${BOUNDARY}\r\n` +
    (framing === "length" ? `Content-Length: ${body.length}\r\n\r\n` : `Transfer-Encoding: chunked\r\n\r\n${body.length.toString(16)}\r\n`);
  const request = Buffer.concat([Buffer.from(head), body, Buffer.from(framing === "chunked" ? "\r\n0\r\n\r\n" : "")]);
  return new Promise((resolve) => {
    const socket = connect(Number(url.port), url.hostname);
    const received: Buffer[] = [];
    socket.on("error", (err: NodeJS.ErrnoException) => resolve({ error: err.code ?? err.message }));
    socket.write(request, (err) => {
      if (err) return;
      socket.on("data", (piece: Buffer) => received.push(piece));
      socket.on("end", () => resolve(parseResponse(Buffer.concat(received).toString("utf8"))));
    });
  });
}

function parseResponse(text: string): { status: number; connection: string | undefined; body: unknown } {
  const [head = "", body = ""] = text.split("\r\n\r\n", 2);
  const [statusLine = "", ...headers] = head.split("\r\n");
  const connection = headers.find((h) => /^connection:/i.test(h))?.split(":")[1]?.trim();
  return { status: Number(statusLine.split(" ")[1]), connection, body: JSON.parse(body) as unknown };
}

/** `total` bytes of deterministic content, in pieces of `pieceBytes`, made as they are read. */
export async function* generatedContent(total: number, seed: Buffer, pieceBytes = 256 * 1024): AsyncGenerator<Buffer> {
  for (let at = 0; at < total; at += pieceBytes) yield contentPiece(at, Math.min(pieceBytes, total - at), seed);
}

/** Bytes `at .. at+length-1` of the generated content: the seed repeated, each copy's first 4 bytes replaced by its index. */
export function contentPiece(at: number, length: number, seed: Buffer): Buffer {
  const out = Buffer.allocUnsafe(length);
  for (let i = 0; i < length; ) {
    const offset = (at + i) % seed.length;
    const copy = Math.floor((at + i) / seed.length);
    const n = Math.min(seed.length - offset, length - i);
    seed.copy(out, i, offset, offset + n);
    for (let k = offset; k < Math.min(4, offset + n); k++) out[i + k - offset] = (copy >>> (8 * k)) & 0xff;
    i += n;
  }
  return out;
}
