import { ValidationError } from "../../errors.js";
import type { KeptRange } from "./tablesQuery.js";

/**
 * A table update (append, pop, insert, in order) as an edit of its base table that never
 * holds the base's row list: the result is a list of segments, each either a run of the
 * base's positions [from, to) or rows the update adds. Pops and inserts only split runs,
 * so the base runs stay ascending and disjoint, and the result can be written by copying
 * each run in ClickHouse and hashed by reading the base once in order.
 */
export type Segment = { readonly kind: "base"; readonly from: number; readonly to: number } | { readonly kind: "added"; readonly digests: string[] };

/** Per update, what /table/update answers: an added row's digest, or the popped row (a base position until looked up). */
export type UpdatedRow = { readonly digest: string } | { readonly basePosition: number };

export type Edit =
  | { readonly kind: "append"; readonly digest: string }
  | { readonly kind: "pop"; readonly index: number }
  | { readonly kind: "insert"; readonly index: number; readonly digest: string };

export interface EditedTable {
  readonly segments: readonly Segment[];
  readonly updated: readonly UpdatedRow[];
  readonly length: number;
}

const segmentLength = (s: Segment): number => (s.kind === "base" ? s.to - s.from : s.digests.length);

/** Applies the edits to a base of `baseLength` rows; a bad index is refused with 422 at `locOf(i)`. */
export function applyEdits(baseLength: number, edits: readonly Edit[], locOf: (i: number) => (string | number)[]): EditedTable {
  let segments: Segment[] = baseLength > 0 ? [{ kind: "base", from: 0, to: baseLength }] : [];
  let length = baseLength;
  const updated: UpdatedRow[] = [];
  edits.forEach((edit, i) => {
    if (edit.kind === "append") {
      appendTo(segments, edit.digest);
      updated.push({ digest: edit.digest });
      length++;
      return;
    }
    const limit = edit.kind === "pop" ? length - 1 : length;
    if (edit.index < 0 || edit.index > limit) {
      throw ValidationError.at(locOf(i), `index ${edit.index} is out of range: the table has ${length} rows at this update`);
    }
    if (edit.kind === "insert") {
      segments = insertAt(segments, edit.index, edit.digest);
      updated.push({ digest: edit.digest });
      length++;
    } else {
      const { segments: next, popped } = popAt(segments, edit.index);
      segments = next;
      updated.push(popped);
      length--;
    }
  });
  return { segments, updated, length };
}

function appendTo(segments: Segment[], digest: string): void {
  const last = segments[segments.length - 1];
  if (last?.kind === "added") last.digests.push(digest);
  else segments.push({ kind: "added", digests: [digest] });
}

/** The segment holding position `index` and the offset in it. */
function locate(segments: readonly Segment[], index: number): { at: number; offset: number } {
  let start = 0;
  for (let at = 0; at < segments.length; at++) {
    const length = segmentLength(segments[at]!);
    if (index < start + length) return { at, offset: index - start };
    start += length;
  }
  return { at: segments.length, offset: 0 };
}

const nonEmpty = (s: Segment): boolean => segmentLength(s) > 0;

function insertAt(segments: Segment[], index: number, digest: string): Segment[] {
  const { at, offset } = locate(segments, index);
  const target = segments[at];
  if (target === undefined) {
    appendTo(segments, digest);
    return segments;
  }
  if (target.kind === "added") {
    target.digests.splice(offset, 0, digest);
    return segments;
  }
  const split: Segment[] = [
    { kind: "base", from: target.from, to: target.from + offset },
    { kind: "added", digests: [digest] },
    { kind: "base", from: target.from + offset, to: target.to },
  ];
  return [...segments.slice(0, at), ...split.filter(nonEmpty), ...segments.slice(at + 1)];
}

function popAt(segments: Segment[], index: number): { segments: Segment[]; popped: UpdatedRow } {
  const { at, offset } = locate(segments, index);
  const target = segments[at]!;
  if (target.kind === "added") {
    const [digest] = target.digests.splice(offset, 1);
    return { segments: segments.filter(nonEmpty), popped: { digest: digest! } };
  }
  const split: Segment[] = [
    { kind: "base", from: target.from, to: target.from + offset },
    { kind: "base", from: target.from + offset + 1, to: target.to },
  ];
  const next = [...segments.slice(0, at), ...split.filter(nonEmpty), ...segments.slice(at + 1)];
  return { segments: next, popped: { basePosition: target.from + offset } };
}

/** Where each segment lands in the new table: base runs to copy, added rows to write. */
export function layout(segments: readonly Segment[]): { kept: KeptRange[]; added: { idx: number; digest: string }[] } {
  const kept: KeptRange[] = [];
  const added: { idx: number; digest: string }[] = [];
  let at = 0;
  for (const segment of segments) {
    if (segment.kind === "base") kept.push({ from: segment.from, to: segment.to, at });
    else segment.digests.forEach((digest, i) => added.push({ idx: at + i, digest }));
    at += segmentLength(segment);
  }
  return { kept, added };
}

/**
 * The new table's row digests in order, given the base's in order: each base run takes its
 * positions from the base stream (skipping the popped ones between runs).
 */
export async function* editedRowDigests(segments: readonly Segment[], base: AsyncIterable<string>): AsyncGenerator<string> {
  const iterator = base[Symbol.asyncIterator]();
  let position = 0;
  const next = async (): Promise<string> => {
    const step = await iterator.next();
    if (step.done) throw new Error(`the base table ended at position ${position}`);
    position++;
    return step.value;
  };
  try {
    for (const segment of segments) {
      if (segment.kind === "added") {
        yield* segment.digests;
        continue;
      }
      while (position < segment.from) await next();
      while (position < segment.to) yield await next();
    }
  } finally {
    await iterator.return?.();
  }
}
