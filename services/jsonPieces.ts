import { isJsonObject } from "./json.js";
import type { BodyArray, PathStep } from "./jsonBounds.js";
import { BACKSLASH } from "./jsonSyntax.js";

/**
 * Parses a JSON request body in pieces when it is large and mostly the elements of one array
 * (`{"batch":[...]}`, an OTLP/JSON export's spans: `checkJsonBytes` found the array, its path
 * and its commas): the value around the array, then the array's elements a few tens of KB at a
 * time. The result is what `JSON.parse` of the whole text gives; anything the pieces cannot
 * show to be the same (a piece that does not parse, a key given twice on the path, escapes in
 * the text around) is parsed whole, which also gives the parser's own error for a body that
 * is not JSON.
 *
 * Why: V8 keeps a string of 128 KiB or more in pages of its own, taken fresh from the kernel
 * for each, and on small VMs touching a fresh page costs about as much as parsing it
 * (docs/benchmarks.md, "Page faults"). A 500-part `upsert_batch` is about 200 KB of text.
 */

export interface PieceSizes {
  /** Bodies shorter than this are parsed whole: one parse is cheaper, and their text is not kept in pages of its own. */
  readonly minBytes: number;
  /** The text parsed at once: well under V8's large-object size. */
  readonly pieceBytes: number;
}

const SIZES: PieceSizes = { minBytes: 96 * 1024, pieceBytes: 32 * 1024 };
/** Dropped before parsing, as body-parser's UTF-8 decoding drops it. */
const BOM = "\uFEFF";

/** The body's value, as `JSON.parse` of its text gives it; throws as it does. */
export function parseJsonBody(bytes: Buffer, array: BodyArray | null, sizes = SIZES): unknown {
  const pieces = array !== null && bytes.length >= sizes.minBytes ? parseInPieces(bytes, array, sizes.pieceBytes) : undefined;
  return pieces === undefined ? JSON.parse(withoutBom(bytes.toString("utf8"))) : pieces;
}

const withoutBom = (text: string) => (text.startsWith(BOM) ? text.slice(1) : text);

/**
 * Stands in the text around for the array: a string holding a NUL, which no other string of a
 * text without escapes can hold (JSON has no raw control character in a string), so that only
 * the array's own place holds it.
 */
const STAND_IN = "\u0000";
const STAND_IN_JSON = JSON.stringify(STAND_IN);

/** The body's value, or undefined when the pieces do not show it is the same as the whole's. */
export function parseInPieces(bytes: Buffer, array: BodyArray, pieceBytes = SIZES.pieceBytes): unknown {
  const { open, close, path } = array;
  if (hasByte(bytes, BACKSLASH, 0, open) || hasByte(bytes, BACKSLASH, close + 1, bytes.length)) return undefined;
  let around: unknown;
  try {
    around = JSON.parse(withoutBom(bytes.toString("utf8", 0, open) + STAND_IN_JSON + bytes.toString("utf8", close + 1)));
  } catch {
    return undefined;
  }
  // Walked by the path, the stand-in is found only where the array was and where no later
  // key of the same name took its object's member (the last of a name is the one JSON.parse keeps).
  let holder: unknown = undefined;
  let value = around;
  let last: string | number | undefined;
  for (const step of path) {
    holder = value;
    last = stepKey(bytes, step);
    value = last === undefined ? undefined : member(holder, last);
  }
  if (value !== STAND_IN) return undefined;
  const elements = arrayElements(bytes, array, pieceBytes);
  if (elements === undefined) return undefined;
  if (last === undefined) return elements;
  (holder as Record<string | number, unknown>)[last] = elements;
  return around;
}

const hasByte = (bytes: Buffer, byte: number, from: number, to: number): boolean => bytes.subarray(from, to).includes(byte);

/** A step's key (its text, the text around having no escapes) or index; undefined for `__proto__`, which JSON.parse keeps as an own member but indexing does not reach. */
function stepKey(bytes: Buffer, step: PathStep): string | number | undefined {
  if (typeof step === "number") return step;
  if (step.keyStart < 0) return undefined;
  const key = bytes.toString("utf8", step.keyStart + 1, step.keyEnd);
  return key === "__proto__" ? undefined : key;
}

/** The value of a member or element, undefined when the holder has no such own one. */
function member(holder: unknown, key: string | number): unknown {
  if (typeof key === "number") return Array.isArray(holder) && key < holder.length ? holder[key] : undefined;
  return isJsonObject(holder) && Object.hasOwn(holder, key) ? holder[key] : undefined;
}

const OPEN = 0x5b;
const CLOSE = 0x5d;

/**
 * The text of `bytes[before + 1, after)` between `[` and `]`, decoded from the bytes with the
 * two written over `before` and `after` for the moment (the array's own bracket or a comma):
 * one string, where joining brackets to the decoded text would make a second, as long, when
 * the parser flattens the two.
 */
function bracketed(bytes: Buffer, before: number, after: number): string {
  const first = bytes[before]!;
  const last = bytes[after]!;
  bytes[before] = OPEN;
  bytes[after] = CLOSE;
  try {
    return bytes.toString("utf8", before, after + 1);
  } finally {
    bytes[before] = first;
    bytes[after] = last;
  }
}

/** The array's elements, about `pieceBytes` at a time; undefined when a piece is not as many JSON values as it has elements. */
function arrayElements(bytes: Buffer, { open, close, commas }: BodyArray, pieceBytes: number): unknown[] | undefined {
  const elements: unknown[] = [];
  let from = open + 1;
  let first = 0;
  while (first <= commas.length) {
    let last = first;
    while (last < commas.length && commas[last]! - from < pieceBytes) last++;
    const end = last < commas.length ? commas[last]! : close;
    let piece: unknown;
    try {
      piece = JSON.parse(bracketed(bytes, from - 1, end));
    } catch {
      return undefined;
    }
    // A piece of n elements parses to n values: an empty one between two commas does not.
    if (!Array.isArray(piece) || piece.length !== last - first + 1) return undefined;
    for (const element of piece) elements.push(element);
    from = end + 1;
    first = last + 1;
  }
  return elements;
}
