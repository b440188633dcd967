/**
 * A JSON array written an element per line: `[`, each element's JSON text on a line of its own
 * (the lines joined by `,`), then `]`. It is still one JSON value, which any reader parses whole;
 * ours parse it an element at a time, finding the lines with a byte search: JSON.stringify never
 * writes a raw line break (it escapes one inside a string).
 *
 * Why: a queue record of a few hundred messages is hundreds of KB of text. V8 keeps a string that
 * large in pages of its own, taken fresh from the kernel for each one, and on these VMs touching
 * a fresh page costs about as much as parsing it (docs/benchmarks.md, "Page faults"). An
 * element's text is small: it lives in the young generation, whose pages are reused.
 */

const LINE = 0x0a;
const OPEN = 0x5b;
const CLOSE = 0x5d;
const COMMA = 0x2c;

/** The bytes `writeArrayLines` writes for these texts. */
export function arrayLinesBytes(texts: readonly string[]): number {
  if (texts.length === 0) return 2;
  let bytes = 4 + 2 * (texts.length - 1);
  for (const text of texts) bytes += Buffer.byteLength(text);
  return bytes;
}

/** Writes the texts (each one JSON value) as an array an element per line into `out` at `at`; answers where it ended. */
export function writeArrayLines(out: Buffer, at: number, texts: readonly string[]): number {
  out[at++] = OPEN;
  if (texts.length > 0) out[at++] = LINE;
  texts.forEach((text, i) => {
    if (i > 0) {
      out[at++] = COMMA;
      out[at++] = LINE;
    }
    at += out.write(text, at);
  });
  if (texts.length > 0) out[at++] = LINE;
  out[at++] = CLOSE;
  return at;
}

/** The texts as such an array, in a Buffer of its own. */
export function arrayLines(texts: readonly string[]): Buffer {
  const out = Buffer.allocUnsafe(arrayLinesBytes(texts));
  writeArrayLines(out, 0, texts);
  return out;
}

/**
 * The elements of an array written an element per line in `bytes[start, end)`, each parsed
 * alone; null when the bytes are not such an array (written whole, pretty-printed, not JSON):
 * then parse them whole. A line that parses alone is a whole element: a line cut inside an
 * array, object or string does not parse.
 */
export function parseArrayLines(bytes: Buffer, start: number, end: number): unknown[] | null {
  if (end - start === 2 && bytes[start] === OPEN && bytes[start + 1] === CLOSE) return [];
  if (end - start < 5 || bytes[start] !== OPEN || bytes[start + 1] !== LINE || bytes[end - 2] !== LINE || bytes[end - 1] !== CLOSE) return null;
  const values: unknown[] = [];
  for (let from = start + 2; ; ) {
    const lineEnd = bytes.indexOf(LINE, from);
    const last = lineEnd === end - 2;
    const textEnd = last ? lineEnd : lineEnd - 1;
    if (lineEnd < 0 || lineEnd > end - 2 || (!last && bytes[textEnd] !== COMMA)) return null;
    try {
      values.push(JSON.parse(bytes.toString("utf8", from, textEnd)));
    } catch {
      return null;
    }
    if (last) return values;
    from = lineEnd + 1;
  }
}

/** JSON in `bytes[start, end)`: an array an element per line read an element at a time, anything else parsed whole; its text when it is not JSON. */
export function parseJsonBytes(bytes: Buffer, start: number, end: number): { value: unknown } | { notJson: string } {
  const elements = parseArrayLines(bytes, start, end);
  if (elements !== null) return { value: elements };
  const text = bytes.toString("utf8", start, end);
  try {
    return { value: JSON.parse(text) as unknown };
  } catch {
    return { notJson: text };
  }
}
