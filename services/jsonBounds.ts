import { isUtf8 } from "node:buffer";
import { JsonParseError } from "./errors.js";
import { BACKSLASH, CLOSE_ARRAY, CLOSE_OBJECT, COMMA, OPEN_ARRAY, OPEN_OBJECT, QUOTE } from "./jsonSyntax.js";

/** Containers a JSON request body may nest (`JSON_MAX_DEPTH`); deeper ones are refused before parsing. */
export const DEFAULT_JSON_MAX_DEPTH = 256;

/** A step from a JSON value to one inside it: a member's key (its string token's quotes) or an element's index. */
export type PathStep = { readonly keyStart: number; readonly keyEnd: number } | number;

/**
 * The array that holds most of a body in elements of their own, as the check found it on its
 * way: the array whose length less its longest element's is the greatest (`{"batch":[...]}`'s
 * parts, or an OTLP/JSON export's spans in `resourceSpans[0].scopeSpans[0].spans`), with the
 * path to it from the body's value, its brackets and the commas between its elements. A hint
 * for parsing the body in pieces (jsonPieces.ts), which checks it.
 */
export interface BodyArray {
  readonly path: readonly PathStep[];
  /** The array's `[` and `]`. */
  readonly open: number;
  readonly close: number;
  /** The commas between its elements, in order. */
  readonly commas: readonly number[];
}

/**
 * Checks the bytes of a JSON request body before they are decoded and parsed: valid UTF-8
 * (a decoder would otherwise put U+FFFD in place of bad bytes, silently changing a value and
 * its digest), no container nested deeper than `maxDepth` (deeper trees overflow the stack of
 * the recursive code that walks them: serializers, flatteners, validators), and no `\u`
 * escape of a lone surrogate (ClickHouse refuses one in a stored string: an event of the
 * worker's batch would be acknowledged, then refused and dead-lettered).
 * Syntax is left to the parser. Throws JsonParseError (400). Answers the body's BodyArray,
 * or null when it has no array.
 */
export function checkJsonBytes(bytes: Uint8Array, maxDepth: number): BodyArray | null {
  if (!isUtf8(bytes)) {
    const at = firstInvalidUtf8(bytes);
    throw new JsonParseError(`the body is not valid UTF-8 (byte ${at})`, at);
  }
  // Per open container, by depth (1 for the body's value): whether it is an array, the key
  // it is the member of (the last string token before it: in valid JSON, its key), and for an
  // array its `[`, the commas so far, where its last element began and its longest element.
  const inArray: boolean[] = [false];
  const keyStarts: number[] = [-1];
  const keyEnds: number[] = [-1];
  const opens: number[] = [-1];
  const commas: number[][] = [[]];
  const marks: number[] = [-1];
  const widest: number[] = [0];
  let depth = 0;
  let array = false;
  let lastStringStart = -1;
  let lastStringEnd = -1;
  let best: BodyArray | null = null;
  let bestScore = -1;
  const strings = new StringSkipper(bytes);
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!;
    if (b === QUOTE) {
      lastStringStart = i;
      i = strings.end(i);
      lastStringEnd = i;
    } else if (b === COMMA) {
      if (array) {
        if (i - marks[depth]! > widest[depth]!) widest[depth] = i - marks[depth]!;
        marks[depth] = i;
        commas[depth]!.push(i);
      }
    } else if (b === OPEN_OBJECT || b === OPEN_ARRAY) {
      if (++depth > maxDepth) throw new JsonParseError(`containers nested deeper than ${maxDepth} levels`, i);
      array = b === OPEN_ARRAY;
      inArray[depth] = array;
      keyStarts[depth] = lastStringStart;
      keyEnds[depth] = lastStringEnd;
      if (array) {
        opens[depth] = i;
        marks[depth] = i;
        widest[depth] = 0;
        if (commas[depth] === undefined) commas[depth] = [];
        else commas[depth]!.length = 0;
      }
    } else if (b === CLOSE_OBJECT || b === CLOSE_ARRAY) {
      if (depth === 0) continue;
      if (b === CLOSE_ARRAY && array) {
        const score = i - opens[depth]! - Math.max(widest[depth]!, i - marks[depth]!);
        if (score > bestScore) {
          bestScore = score;
          best = { path: pathTo(depth, inArray, keyStarts, keyEnds, commas), open: opens[depth]!, close: i, commas: commas[depth]!.slice() };
        }
      }
      array = inArray[--depth]!;
    }
  }
  return best;
}

/** The steps to the container open at `depth` from the body's value, as the scan stands. */
function pathTo(depth: number, inArray: readonly boolean[], keyStarts: readonly number[], keyEnds: readonly number[], commas: readonly number[][]): PathStep[] {
  const path: PathStep[] = [];
  // A member's key is the last string before its container opened (keyStarts[d + 1]); one
  // before the object's own `{` (an object's first container member without a key) is not JSON,
  // which the parse of the text around finds.
  for (let d = 1; d < depth; d++) path.push(inArray[d] ? commas[d]!.length : { keyStart: keyStarts[d + 1]!, keyEnd: keyEnds[d + 1]! });
  return path;
}

const U = 0x75;
/** Bytes of a string looked at one by one before the native search takes over. */
const SHORT_STRING_BYTES = 64;

/**
 * Finds where strings end with the native byte search (`indexOf`) rather than a loop over
 * their bytes: most of a request body is string contents. The next backslash is searched
 * once and kept, so the bytes are searched for each of the two at most once overall.
 */
class StringSkipper {
  private nextBackslash: number;

  constructor(private readonly bytes: Uint8Array) {
    this.nextBackslash = bytes.indexOf(BACKSLASH);
  }

  /** Index of the closing quote of the string opened at `start` (or the end of the bytes). */
  end(start: number): number {
    const { bytes } = this;
    // Most strings of a body are short keys, ids and times: looked at here, their bytes
    // cost less than two native calls. A backslash leaves the escapes to the search below.
    const shortEnd = Math.min(bytes.length, start + 1 + SHORT_STRING_BYTES);
    for (let i = start + 1; i < shortEnd; i++) {
      const b = bytes[i];
      if (b === QUOTE) return i;
      if (b === BACKSLASH) break;
    }
    if (this.nextBackslash !== -1 && this.nextBackslash <= start) this.nextBackslash = bytes.indexOf(BACKSLASH, start + 1);
    let close = bytes.indexOf(QUOTE, start + 1);
    while (close !== -1 && this.nextBackslash !== -1 && this.nextBackslash < close) {
      const after = escapeEnd(bytes, this.nextBackslash);
      if (close < after) close = bytes.indexOf(QUOTE, after);
      this.nextBackslash = bytes.indexOf(BACKSLASH, after);
    }
    return close === -1 ? bytes.length : close;
  }
}

/** The index after the escape at `at` (a backslash); throws on a `\u` escape of a lone surrogate. */
function escapeEnd(bytes: Uint8Array, at: number): number {
  if (bytes[at + 1] !== U) return at + 2;
  const unit = hex4(bytes, at + 2);
  if (unit >= 0xdc00 && unit <= 0xdfff) throw new JsonParseError("a \\u escape of a lone low surrogate", at);
  if (unit < 0xd800 || unit > 0xdbff) return at + 6;
  const next = bytes[at + 6] === BACKSLASH && bytes[at + 7] === U ? hex4(bytes, at + 8) : -1;
  if (next < 0xdc00 || next > 0xdfff) throw new JsonParseError("a \\u escape of a lone high surrogate", at);
  return at + 12;
}

/** The code unit of 4 hex digits at `at`; -1 when they are not hex (the parser reports it). */
function hex4(bytes: Uint8Array, at: number): number {
  let unit = 0;
  for (let k = at; k < at + 4; k++) {
    const d = hexDigit(bytes[k]);
    if (d < 0) return -1;
    unit = unit * 16 + d;
  }
  return unit;
}

function hexDigit(b: number | undefined): number {
  if (b === undefined) return -1;
  if (b >= 0x30 && b <= 0x39) return b - 0x30;
  const lower = b | 0x20;
  return lower >= 0x61 && lower <= 0x66 ? lower - 0x61 + 10 : -1;
}

/** Byte offset of the first byte that does not start a valid UTF-8 sequence (for the error message). */
function firstInvalidUtf8(bytes: Uint8Array): number {
  let i = 0;
  while (i < bytes.length) {
    const b = bytes[i]!;
    const length = b < 0x80 ? 1 : b >= 0xc2 && b <= 0xdf ? 2 : b >= 0xe0 && b <= 0xef ? 3 : b >= 0xf0 && b <= 0xf4 ? 4 : 0;
    if (length === 0 || i + length > bytes.length || !isUtf8(bytes.subarray(i, i + length))) return i;
    i += length;
  }
  return i;
}
