import busboy from "busboy";
import type { Request, Response } from "express";
import type { Readable } from "node:stream";
import { ClientError, ValidationError } from "../errors.js";
import { closeAfterAnswer } from "./lingeringClose.js";

/** The one file part of a form, as its bytes arrive. */
export interface FilePart {
  readonly filename: string;
  readonly mimeType: string;
  readonly stream: Readable;
}

export interface SingleFileForm<T> {
  /** The name of the file part; any other file part is refused. */
  readonly fileField: string;
  /** Sees each text field as it arrives, before and after the file; may throw to refuse the request at once. */
  onField(name: string, value: string): void;
  /** Called when the file part starts; reads the stream to its end. */
  onFile(file: FilePart): Promise<T>;
  /** Releases what `onFile` built when the request fails after it (a second file, a broken body). */
  discard(result: T): Promise<void>;
}

const LIMITS = { fieldNameSize: 100, fieldSize: 64 * 1024, fields: 16, files: 1, parts: 17, headerPairs: 100 };

/**
 * Reads a multipart/form-data body of text fields and exactly one file part, in the order
 * sent, without holding the file: `onFile` consumes it as it arrives (backpressure reaches
 * the client). Resolves once the whole body is read, with every text field and `onFile`'s
 * result. Refusals: not multipart → 415; a malformed body or one that ends early → 400; a
 * missing, extra or misnamed file part, or an oversized field → 422. When the request
 * fails before its body was read, the rest is discarded and the connection closed after
 * the answer, so a large upload is not read to its end for nothing.
 */
export async function readSingleFileForm<T>(req: Request, res: Response, form: SingleFileForm<T>): Promise<{ fields: Map<string, string>; file: T }> {
  const parser = multipartParser(req, form.fileField);
  const fields = new Map<string, string>();
  const part: { stream: Readable | null; outcome: Promise<Settled<T>> | null } = { stream: null, outcome: null };

  const ended = new Promise<void>((resolve, reject) => {
    let failed = false;
    const fail = (err: unknown) => {
      if (failed) return;
      failed = true;
      reject(err);
      req.unpipe(parser);
      // Ends a file still being read (its reader then fails and drops what it stored).
      part.stream?.destroy();
      if (req.complete) return;
      if (!res.headersSent) closeAfterAnswer(res);
      req.resume();
    };
    const refuse = (name: string, msg: string) => fail(ValidationError.at(["body", name], msg));
    parser.on("field", (name, value, info) => {
      if (info.nameTruncated || info.valueTruncated) return refuse(name, `field longer than ${LIMITS.fieldSize} bytes`);
      if (fields.has(name)) return refuse(name, "field sent more than once");
      fields.set(name, value);
      try {
        form.onField(name, value);
      } catch (err) {
        fail(err);
      }
    });
    parser.on("file", (name, stream, info) => {
      // Its reader sees errors through its own listener; this one keeps an error of a file
      // nobody reads (a refused request) from going unhandled.
      stream.on("error", () => undefined);
      if (name !== form.fileField) {
        stream.resume();
        return refuse(name, `unexpected file part "${name}": the file goes in the part named "${form.fileField}"`);
      }
      part.stream = stream;
      part.outcome = settle(form.onFile({ filename: info.filename ?? "", mimeType: info.mimeType, stream }));
      void part.outcome.then((outcome) => outcome.ok || fail(outcome.error));
    });
    parser.on("filesLimit", () => refuse(form.fileField, "exactly one file part is allowed"));
    parser.on("fieldsLimit", () => refuse("fields", `at most ${LIMITS.fields} fields are allowed`));
    parser.on("partsLimit", () => refuse("fields", `at most ${LIMITS.parts} parts are allowed`));
    parser.on("error", (err: Error) => fail(new ClientError(400, `malformed multipart body: ${err.message}`)));
    parser.on("close", () => resolve());
    req.on("error", (err) => fail(new ClientError(400, `the request body could not be read: ${err.message}`)));
    req.on("close", () => req.complete || fail(new ClientError(400, "the request body ended early")));
    req.pipe(parser);
  });

  try {
    await ended;
    if (!part.outcome) throw ValidationError.at(["body", form.fileField], `a file part named "${form.fileField}" is required`, "missing");
    const outcome = await part.outcome;
    if (!outcome.ok) throw outcome.error;
    return { fields, file: outcome.value };
  } catch (err) {
    const outcome = part.outcome ? await part.outcome : null;
    if (outcome?.ok) await form.discard(outcome.value);
    throw err;
  }
}

function multipartParser(req: Request, fileField: string): busboy.Busboy {
  const type = req.headers["content-type"] ?? "";
  if (!/^multipart\/form-data\b/i.test(type)) {
    throw new ClientError(415, `expected a multipart/form-data body with a file part named "${fileField}", got ${type ? `"${type.slice(0, 100)}"` : "no Content-Type"}`);
  }
  try {
    return busboy({ headers: req.headers, limits: LIMITS });
  } catch (err) {
    throw new ClientError(400, `malformed multipart body: ${err instanceof Error ? err.message : String(err)}`);
  }
}

type Settled<T> = { ok: true; value: T } | { ok: false; error: unknown };

const settle = <T>(promise: Promise<T>): Promise<Settled<T>> =>
  promise.then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error }),
  );
