import type { IncomingMessage } from "node:http";

/**
 * Request bodies the service reads itself, without body-parser: those whose length is
 * declared and within the limit, not compressed, and in UTF-8 (no charset named, or utf-8).
 * Every other body (compressed, chunked, empty, another charset, over the limit) goes to
 * body-parser, which inflates, decodes or refuses it.
 */

const UTF8_CHARSET = /;\s*charset\s*=\s*"?utf-8"?\s*(;|$)/i;
const LENGTH = /^\d{1,15}$/;

/** The body's declared length when this module reads it, else null. */
export function plainBodyLength(req: IncomingMessage, maxBytes: number): number | null {
  const encoding = req.headers["content-encoding"];
  if (encoding !== undefined && encoding.toLowerCase() !== "identity") return null;
  const type = req.headers["content-type"];
  if (type !== undefined && type.toLowerCase().includes("charset") && !UTF8_CHARSET.test(type)) return null;
  const declared = req.headers["content-length"];
  if (declared === undefined || !LENGTH.test(declared)) return null;
  const length = Number(declared);
  return length > 0 && length <= maxBytes ? length : null;
}

/** A body that ended before its declared length: answered 400, as body-parser answers it. */
const requestAborted = (): Error => Object.assign(new Error("request aborted"), { status: 400, type: "request.aborted" });

/** Reads the whole body of `length` bytes; an error when the request ends or fails before. */
export function readPlainBody(req: IncomingMessage, length: number, done: (err: Error | null, body: Buffer) => void): void {
  let chunks: Buffer[] = [];
  let received = 0;
  let finished = false;
  const finish = (err: Error | null) => {
    if (finished) return;
    finished = true;
    req.off("data", onData).off("end", onEnd).off("error", onError).off("close", onClose);
    const body = err ? Buffer.alloc(0) : chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, received);
    chunks = [];
    done(err, body);
  };
  const onData = (chunk: Buffer) => {
    chunks.push(chunk);
    received += chunk.length;
  };
  const onEnd = () => finish(received === length ? null : requestAborted());
  const onError = (err: Error) => finish(Object.assign(err, { status: 400 }));
  const onClose = () => finish(requestAborted());
  req.on("data", onData).on("end", onEnd).on("error", onError).on("close", onClose);
}
