import type { Response } from "express";

/**
 * Writes a stream of objects as JSON lines (default) or, when the client accepts only
 * application/json, as one JSON array, flushing as items come and honouring backpressure.
 */
export async function writeStream(res: Response, accept: string | undefined, items: AsyncIterable<unknown>): Promise<void> {
  await writeJsonTextStream(res, accept, stringified(items));
}

async function* stringified(items: AsyncIterable<unknown>): AsyncGenerator<string> {
  for await (const item of items) yield JSON.stringify(item);
}

/** writeStream for items already written as JSON text (one line each: no newline inside). */
export async function writeJsonTextStream(res: Response, accept: string | undefined, texts: AsyncIterable<string>): Promise<void> {
  const asArray = !!accept && accept.includes("application/json") && !accept.includes("jsonl");
  if (asArray) return writeJsonTextArray(res, "[", "]", texts);
  await writeTexts(res, "application/jsonl", texts, (text) => `${text}\n`);
  res.end();
}

/** One JSON document made of `head`, the texts comma-separated, then `tail` (`{"rows":[` ... `]}`). */
export async function writeJsonTextArray(res: Response, head: string, tail: string, texts: AsyncIterable<string>): Promise<void> {
  let first = true;
  await writeTexts(res, "application/json", texts, (text) => {
    const chunk = `${first ? head : ","}${text}`;
    first = false;
    return chunk;
  });
  if (first) await write(res, head);
  await write(res, tail);
  res.end();
}

/**
 * Writes each text as it comes, honouring backpressure; the status and type are set at the
 * first text (or at the end), so an error before it is still answered as an error.
 */
async function writeTexts(res: Response, type: string, texts: AsyncIterable<string>, frame: (text: string) => string): Promise<void> {
  let started = false;
  for await (const text of texts) {
    if (!started) res.status(200).setHeader("Content-Type", type);
    started = true;
    await write(res, frame(text));
  }
  if (!started) res.status(200).setHeader("Content-Type", type);
}

async function write(res: Response, chunk: string): Promise<void> {
  if (!res.write(chunk)) await new Promise<void>((r) => res.once("drain", () => r()));
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
