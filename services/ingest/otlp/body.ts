/**
 * Reading an OTLP/HTTP request body: the content type and encoding it declares, and the
 * body itself, inflated as it streams in, with the size limit applied to the inflated
 * bytes (so a small gzip bomb is stopped after `limit` bytes, not after inflating it all)
 * and to the bytes on the wire.
 */
import type { IncomingMessage } from "node:http";
import { createGunzip, createInflate, createInflateRaw, type Gunzip, type Inflate, type InflateRaw } from "node:zlib";

type Inflater = Gunzip | Inflate | InflateRaw;
import { ClientError } from "../../errors.js";
import type { OtlpFormat } from "../../otlp/decode.js";

export type OtlpEncoding = "identity" | "gzip" | "deflate";

/** `application/x-protobuf` or `application/json` (a UTF-8 charset allowed); anything else is null. */
export function requestFormat(contentType: string | undefined): OtlpFormat | null {
  if (!contentType) return null;
  const [type = "", ...params] = contentType.split(";").map((p) => p.trim().toLowerCase());
  if (type === "application/x-protobuf") return "protobuf";
  if (type !== "application/json") return null;
  for (const param of params) {
    const [name, value = ""] = param.split("=", 2).map((p) => p.trim());
    if (name === "charset" && !["utf-8", "utf8", '"utf-8"'].includes(value)) return null;
  }
  return "json";
}

/** The one `Content-Encoding` we can undo, or null. Absent means identity. */
export function requestEncoding(header: string | undefined): OtlpEncoding | null {
  const value = (header ?? "").trim().toLowerCase();
  if (value === "" || value === "identity") return "identity";
  if (value === "gzip" || value === "x-gzip") return "gzip";
  if (value === "deflate") return "deflate";
  return null;
}

export class BodyTooLargeError extends ClientError {
  constructor(limit: number, what: string) {
    super(413, `request body ${what} is over the limit of ${limit} bytes`);
  }
}

/**
 * HTTP `deflate` is the zlib format (RFC 1950), but some clients send raw deflate: a zlib
 * stream starts with a method byte of 8 and a header check that is a multiple of 31.
 */
function inflaterFor(encoding: OtlpEncoding, head: Buffer): Inflater | null {
  if (encoding === "gzip") return createGunzip(INFLATE_OPTIONS);
  if (encoding === "identity") return null;
  const zlibHeader = head.length >= 2 && (head[0]! & 0x0f) === 8 && ((head[0]! << 8) | head[1]!) % 31 === 0;
  return zlibHeader ? createInflate(INFLATE_OPTIONS) : createInflateRaw(INFLATE_OPTIONS);
}

/**
 * Inflated output in pieces of 64 KiB rather than zlib's 16: each piece costs the request
 * thread a callback and a buffer, and an export inflates to hundreds of kilobytes.
 */
const INFLATE_OPTIONS = { chunkSize: 64 * 1024 };

/**
 * The whole body, decoded from its content encoding. Rejects with BodyTooLargeError (413)
 * as soon as either the received or the inflated size passes `limit`, and with a 400
 * ClientError when the compressed data is corrupt. The request is never destroyed: what
 * is left of it is read and dropped, so that the answer still reaches the client.
 * An empty body is an empty buffer, whatever its encoding.
 */
export function readBody(req: IncomingMessage, encoding: OtlpEncoding, limit: number): Promise<Buffer> {
  const declared = Number(req.headers["content-length"]);
  if (Number.isFinite(declared) && declared > limit) return Promise.reject(new BodyTooLargeError(limit, "size"));

  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let received = 0;
    let kept = 0;
    let settled = false;
    let inflater: Inflater | null = null;
    let head: Buffer | null = null;

    const finish = (err: Error | null) => {
      if (settled) return;
      settled = true;
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("error", onError);
      if (err) {
        inflater?.destroy();
        req.resume(); // drain and drop the rest, keep the connection usable
        reject(err);
      } else {
        resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, kept));
      }
    };
    const keep = (chunk: Buffer) => {
      if (settled) return;
      kept += chunk.length;
      if (kept > limit) finish(new BodyTooLargeError(limit, encoding === "identity" ? "size" : "size after decompression"));
      else chunks.push(chunk);
    };
    const startInflating = (first: Buffer) => {
      inflater = inflaterFor(encoding, first);
      if (!inflater) return;
      const current = inflater;
      current.on("data", keep);
      current.on("error", (e: Error) => finish(new ClientError(400, `invalid ${encoding} body: ${e.message}`)));
      current.on("end", () => finish(null));
    };
    const feed = (chunk: Buffer) => {
      if (!inflater) return keep(chunk);
      if (!inflater.write(chunk)) {
        req.pause();
        inflater.once("drain", () => req.resume());
      }
    };
    function onData(chunk: Buffer) {
      received += chunk.length;
      if (received > limit) return finish(new BodyTooLargeError(limit, "size"));
      if (encoding === "identity") return keep(chunk);
      if (inflater) return feed(chunk);
      // Wait for two bytes to tell zlib from raw deflate.
      head = head ? Buffer.concat([head, chunk]) : chunk;
      if (head.length < 2) return;
      startInflating(head);
      const first = head;
      head = null;
      feed(first);
    }
    function onEnd() {
      if (received === 0) return finish(null);
      if (encoding === "identity") return finish(null);
      if (!inflater && head) {
        startInflating(head);
        feed(head);
        head = null;
      }
      (inflater as Inflater | null)?.end();
    }
    function onError(err: Error) {
      finish(new ClientError(400, `request body could not be read: ${err.message}`));
    }
    req.on("data", onData);
    req.on("end", onEnd);
    req.on("error", onError);
  });
}
