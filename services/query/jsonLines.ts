import type { Response } from "express";

/**
 * Writes a stream of objects as JSON lines (default) or, when the client accepts only
 * application/json, as one JSON array, flushing as items come and honouring backpressure.
 */
export async function writeStream(res: Response, accept: string | undefined, items: AsyncIterable<unknown>): Promise<void> {
  const asArray = !!accept && accept.includes("application/json") && !accept.includes("jsonl");
  let first = true;
  let started = false;
  const write = async (chunk: string) => {
    if (!res.write(chunk)) await new Promise<void>((r) => res.once("drain", () => r()));
  };
  for await (const item of items) {
    if (!started) {
      res.status(200).setHeader("Content-Type", asArray ? "application/json" : "application/jsonl");
      if (asArray) await write("[");
      started = true;
    }
    await write(asArray ? `${first ? "" : ","}${JSON.stringify(item)}` : `${JSON.stringify(item)}\n`);
    first = false;
  }
  if (!started) {
    res.status(200).setHeader("Content-Type", asArray ? "application/json" : "application/jsonl");
    if (asArray) await write("[");
  }
  if (asArray) await write("]");
  res.end();
}

/** Groups an async stream into arrays of at most `size`, so each chunk can be enriched at once. */
export async function* chunked<T>(items: AsyncIterable<T>, size: number): AsyncGenerator<T[]> {
  let chunk: T[] = [];
  for await (const item of items) {
    chunk.push(item);
    if (chunk.length >= size) {
      yield chunk;
      chunk = [];
    }
  }
  if (chunk.length > 0) yield chunk;
}
