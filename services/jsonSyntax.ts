import { JsonParseError } from "./errors.js";

/**
 * Checks that a text is one JSON value (RFC 8259) without building it: a scan with a stack
 * of open containers, for request bodies read as text only (a 10 MB table is then never a
 * tree of objects in memory). Throws JsonParseError (400) at the first error.
 */
export function checkJsonSyntax(text: string): void {
  const open: number[] = [];
  let i = skipWhitespace(text, 0);
  for (;;) {
    const c = text.charCodeAt(i);
    if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      const close = c === OPEN_OBJECT ? CLOSE_OBJECT : CLOSE_ARRAY;
      i = skipWhitespace(text, i + 1);
      if (text.charCodeAt(i) === close) {
        i++;
      } else {
        open.push(close);
        if (close === CLOSE_OBJECT) i = memberKey(text, i);
        continue;
      }
    } else {
      i = scalar(text, i);
    }
    // After a value: close what ends here, then the next member or element.
    for (;;) {
      i = skipWhitespace(text, i);
      const close = open[open.length - 1];
      if (close === undefined) {
        if (i !== text.length) fail("unexpected data after the JSON value", i);
        return;
      }
      const d = text.charCodeAt(i);
      if (d === COMMA) {
        i = skipWhitespace(text, i + 1);
        if (close === CLOSE_OBJECT) i = memberKey(text, i);
        break;
      }
      if (d !== close) fail(close === CLOSE_OBJECT ? "expected ',' or '}'" : "expected ',' or ']'", i);
      open.pop();
      i++;
    }
  }
}

/** Character codes of JSON's structure (also its bytes in UTF-8): shared with jsonBounds.ts. */
export const OPEN_OBJECT = 123;
export const CLOSE_OBJECT = 125;
export const OPEN_ARRAY = 91;
export const CLOSE_ARRAY = 93;
export const COMMA = 44;
export const QUOTE = 34;
export const BACKSLASH = 92;

function fail(reason: string, position: number): never {
  throw new JsonParseError(reason, position);
}

function skipWhitespace(text: string, i: number): number {
  for (;;) {
    const c = text.charCodeAt(i);
    if (c !== 32 && c !== 10 && c !== 13 && c !== 9) return i;
    i++;
  }
}

/** A key and its colon; answers where the member's value starts. */
function memberKey(text: string, i: number): number {
  if (text.charCodeAt(i) !== QUOTE) fail("expected a string key", i);
  i = skipWhitespace(text, stringEnd(text, i));
  if (text.charCodeAt(i) !== 58) fail("expected ':'", i);
  return skipWhitespace(text, i + 1);
}

function scalar(text: string, i: number): number {
  const c = text.charCodeAt(i);
  if (c === QUOTE) return stringEnd(text, i);
  for (const word of ["true", "false", "null"]) if (text.startsWith(word, i)) return i + word.length;
  if (c === 45 || (c >= 48 && c <= 57)) return numberEnd(text, i);
  return fail(i >= text.length ? "unexpected end of the JSON text" : "unexpected character", i);
}

const HEX = /^[0-9a-fA-F]{4}$/;
const ESCAPED = new Set([34, 92, 47, 98, 102, 110, 114, 116]);

/** The end of the string starting at `i` (a quote), just after its closing quote. */
function stringEnd(text: string, i: number): number {
  for (let j = i + 1; j < text.length; j++) {
    const c = text.charCodeAt(j);
    if (c === QUOTE) return j + 1;
    if (c < 32) fail("control character in a string", j);
    if (c !== BACKSLASH) continue;
    const e = text.charCodeAt(j + 1);
    if (e === 117) {
      if (!HEX.test(text.slice(j + 2, j + 6))) fail("bad \\u escape", j);
      j += 5;
    } else if (ESCAPED.has(e)) {
      j += 1;
    } else {
      fail("bad escape", j);
    }
  }
  return fail("unterminated string", i);
}

const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;

function numberEnd(text: string, i: number): number {
  NUMBER.lastIndex = i;
  if (!NUMBER.test(text)) fail("bad number", i);
  return NUMBER.lastIndex;
}
