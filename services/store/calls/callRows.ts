import { CALL_FIELD_ENTRIES, nullableInRow, type CALL_FIELDS, type CallFieldName, type CallFieldSpec, type CallFieldValues, type NullableInRow } from "../../contract/callFields.js";
import type { JsonValue } from "../../json.js";

/**
 * A call as the worker assembles it from its parts: the domain form of one `calls` row, its
 * fields those of contract/callFields.ts. `has_end` is derived from `ended_at`;
 * `start_known` is false for a call known only from an end that named its start time (its
 * start fields are placeholders until the start comes), and is stored in the row's version
 * rank (`rowVersion`).
 */
export interface CallSnapshot extends CallFieldValues {
  start_known: boolean;
}

const VERSION_EPOCH_MICROS = 1_600_000_000_000_000;
const RANK_STRIDE = 1_000_000_000_000_000;

/**
 * Row version for ReplacingMergeTree: rank × RANK_STRIDE + time written. Ranks: 0 a call
 * known only from its end, 1 started, 2 started and finished. So a finished call always
 * outranks an unfinished one (a late duplicate start never hides an end), a known start
 * outranks a placeholder (reads by id see the start's fields as soon as they are stored, which
 * the worker's write-then-look protocol relies on), and within a rank later writes win.
 * Rows written before rank 0 existed keep their meaning. Stays below 2^53 until about 2050.
 */
export function rowVersion(snapshot: CallSnapshot, nowMicros: number): number {
  const rank = !snapshot.start_known ? 0 : snapshot.ended_at === null ? 1 : 2;
  return rank * RANK_STRIDE + (nowMicros - VERSION_EPOCH_MICROS);
}

function startKnownOf(version: string | number): boolean {
  return Number(version) >= RANK_STRIDE;
}

type RowValue<S extends CallFieldSpec> = S["type"] extends "int" | "datetime" ? string | number : string;
type OrNull<S extends CallFieldSpec, V> = NullableInRow<S> extends true ? V | null : V;

/**
 * The `calls` row as ClickHouse returns it in JSONEachRow: a field of the table per column
 * (Int64 comes back as a string, JSON as its text), and the storage size.
 */
export type CallRow = { [K in CallFieldName]: OrNull<(typeof CALL_FIELDS)[K], RowValue<(typeof CALL_FIELDS)[K]>> } & {
  storage_size_bytes: string | number;
};

/** A `calls` row read whole, with its version (the worker's lookups). */
export type VersionedCallRow = CallRow & { version: string | number };

/**
 * A row's column → the snapshot's value, by the field's type; made once per field. An
 * object column that is '' reads `{}`, one that is NULL reads null where the row may hold
 * NULL (`summary`, `otel_dump`), else `{}`; `output` NULL or '' reads null.
 */
function readerOf(spec: CallFieldSpec): (value: unknown) => unknown {
  switch (spec.type) {
    case "string":
      return (v) => v;
    case "int":
    case "datetime":
      return (v) => (v === null ? null : Number(v));
    case "json_object": {
      const nullable = nullableInRow(spec);
      return (v) => (v === null ? (nullable ? null : {}) : v === "" ? {} : (JSON.parse(v as string) as JsonValue));
    }
    case "json_value":
      return (v) => (v === null || v === "" ? null : (JSON.parse(v as string) as JsonValue));
  }
}

const READERS = CALL_FIELD_ENTRIES.map(([name, spec]) => [name, readerOf(spec)] as const);

export function rowToSnapshot(row: VersionedCallRow): CallSnapshot {
  const snapshot: Record<string, unknown> = {};
  for (const [name, read] of READERS) snapshot[name] = read(row[name]);
  snapshot.start_known = startKnownOf(row.version);
  return snapshot as unknown as CallSnapshot;
}
