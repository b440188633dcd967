/**
 * Where values sit in a JSON text, without parsing it: a table request carries thousands of
 * rows that must be read losslessly one at a time (a lossless tree of the whole body would
 * weigh several times the body). The text has already been parsed by JSON.parse (the HTTP
 * layer's body parser), so it is known to be valid JSON; these functions only skip over it.
 * A key named twice resolves to its last value, as JSON.parse resolves it.
 */

export interface Span {
  readonly start: number;
  readonly end: number;
}

const isWhitespace = (c: number): boolean => c === 32 || c === 10 || c === 13 || c === 9;

function skipWhitespace(text: string, pos: number): number {
  while (isWhitespace(text.charCodeAt(pos))) pos++;
  return pos;
}

/** The end of the string starting at `pos` (a `"`), just after its closing quote. */
function skipString(text: string, pos: number): number {
  let i = pos + 1;
  for (;;) {
    const quote = text.indexOf('"', i);
    if (quote < 0) throw new Error("unterminated string in JSON text already parsed");
    let backslashes = 0;
    while (text.charCodeAt(quote - 1 - backslashes) === 92) backslashes++;
    if (backslashes % 2 === 0) return quote + 1;
    i = quote + 1;
  }
}

/** The end of the value starting at `pos` (no leading whitespace). */
function skipValue(text: string, pos: number): number {
  const c = text.charCodeAt(pos);
  if (c === 34) return skipString(text, pos);
  if (c !== 123 && c !== 91) {
    let i = pos;
    for (;;) {
      const d = text.charCodeAt(i);
      if (Number.isNaN(d) || d === 44 || d === 125 || d === 93 || isWhitespace(d)) return i;
      i++;
    }
  }
  let depth = 0;
  let i = pos;
  for (;;) {
    const d = text.charCodeAt(i);
    if (d === 34) {
      i = skipString(text, i);
      continue;
    }
    if (d === 123 || d === 91) depth++;
    else if (d === 125 || d === 93) {
      depth--;
      if (depth === 0) return i + 1;
    } else if (Number.isNaN(d)) throw new Error("unterminated container in JSON text already parsed");
    i++;
  }
}

/** The whole text's value. */
export function documentSpan(text: string): Span {
  const start = skipWhitespace(text, 0);
  return { start, end: skipValue(text, start) };
}

/** The value of `key` in the object at `span`; null when the object has no such key (or is no object). */
export function memberSpan(text: string, span: Span, key: string): Span | null {
  if (text.charCodeAt(span.start) !== 123) return null;
  let found: Span | null = null;
  let pos = skipWhitespace(text, span.start + 1);
  while (text.charCodeAt(pos) === 34) {
    const keyEnd = skipString(text, pos);
    const raw = text.slice(pos + 1, keyEnd - 1);
    const name = raw.includes("\\") ? (JSON.parse(text.slice(pos, keyEnd)) as string) : raw;
    pos = skipWhitespace(text, keyEnd) + 1; // past ':'
    const start = skipWhitespace(text, pos);
    const end = skipValue(text, start);
    if (name === key) found = { start, end };
    pos = skipWhitespace(text, end);
    if (text.charCodeAt(pos) === 44) pos = skipWhitespace(text, pos + 1);
  }
  return found;
}

/** The value at a path of keys below `span`; null when any key is missing. */
export function pathSpan(text: string, span: Span, keys: readonly string[]): Span | null {
  let at: Span | null = span;
  for (const key of keys) {
    if (at === null) return null;
    at = memberSpan(text, at, key);
  }
  return at;
}

/** The elements of the array at `span`, in order. */
export function* elementSpans(text: string, span: Span): Generator<Span> {
  if (text.charCodeAt(span.start) !== 91) return;
  let pos = skipWhitespace(text, span.start + 1);
  while (pos < span.end - 1) {
    const end = skipValue(text, pos);
    yield { start: pos, end };
    pos = skipWhitespace(text, end);
    if (text.charCodeAt(pos) === 44) pos = skipWhitespace(text, pos + 1);
  }
}
