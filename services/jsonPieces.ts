import { isJsonObject } from "./json.js";
import type { MemberArray } from "./jsonBounds.js";

/**
 * Parses a JSON request body in pieces when it is large and mostly one array member of a
 * top-level object (`{"batch":[...]}`, where `checkJsonBytes` found the array's commas): the
 * object around the array, then the array's elements a few tens of KB at a time. The result
 * is what `JSON.parse` of the whole text gives; anything the pieces cannot show to be the same
 * (a piece that does not parse, a key given twice, escapes in the object around) is parsed
 * whole, which also gives the parser's own error for a body that is not JSON.
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
export function parseJsonBody(bytes: Buffer, array: MemberArray | null, sizes = SIZES): unknown {
  const pieces = array !== null && bytes.length >= sizes.minBytes ? parseInPieces(bytes, array, sizes.pieceBytes) : undefined;
  return pieces === undefined ? JSON.parse(withoutBom(bytes.toString("utf8"))) : pieces;
}

const withoutBom = (text: string) => (text.startsWith(BOM) ? text.slice(1) : text);

/** The body's value, or undefined when the pieces do not show it is the same as the whole's. */
export function parseInPieces(bytes: Buffer, array: MemberArray, pieceBytes = SIZES.pieceBytes): unknown {
  const around = withoutBom(bytes.toString("utf8", 0, array.open + 1) + bytes.toString("utf8", array.close));
  // The object around parses only if the last string before the `[` is its key (and a colon between).
  const keyText = bytes.toString("utf8", array.keyStart, array.keyEnd + 1);
  // Without escapes, the key's text found once is the key given once (no other spelling of it).
  if (around.includes("\\") || around.indexOf(keyText) !== around.lastIndexOf(keyText)) return undefined;
  const key = JSON.parse(keyText) as string;
  if (key === "__proto__") return undefined;
  let object: unknown;
  try {
    object = JSON.parse(around);
  } catch {
    return undefined;
  }
  if (!isJsonObject(object)) return undefined;
  const empty = object[key];
  if (!Array.isArray(empty) || empty.length !== 0) return undefined;
  const elements = arrayElements(bytes, array, pieceBytes);
  if (elements === undefined) return undefined;
  object[key] = elements;
  return object;
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
function arrayElements(bytes: Buffer, { open, close, commas }: MemberArray, pieceBytes: number): unknown[] | undefined {
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
