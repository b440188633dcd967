import type { CallEndEvent, CallsDeleteEvent, CallUpdateEvent } from "../../queue/events.js";
import type { ClickHouseStore } from "../clickhouse.js";
import { RowBinaryWriter } from "../../rowBinaryWriter.js";
import { idChunks, ParamBuilder } from "../sql.js";
import { rowToSnapshot, type CallSnapshot, type VersionedCallRow } from "./callRows.js";
import { flattenCallJson, flattenPart, MAX_LEAVES, PART_ORDER, type FlattenedJson, type JsonPart } from "../../jsonLeaves.js";
import type { JsonValue } from "../../json.js";
import { EncodedJson, jsonFieldValue, type EncodedLeaves, type JsonField } from "../../queue/encodedJson.js";

export interface CallKey {
  readonly project_id: string;
  readonly id: string;
}

/** A part kept in `call_orphan_parts` until its call's start is stored. */
export type ParkedPart = CallEndEvent | CallUpdateEvent;

export const callKey = (k: CallKey): string => `${k.project_id}/${k.id}`;

/** Groups keys by project, in slices of IDS_PER_QUERY ids: one lookup query per slice. */
function* byProject(keys: readonly CallKey[]): Generator<[string, string[]]> {
  const grouped = new Map<string, string[]>();
  for (const k of keys) {
    const ids = grouped.get(k.project_id);
    if (ids) ids.push(k.id);
    else grouped.set(k.project_id, [k.id]);
  }
  for (const [projectId, ids] of grouped) for (const chunk of idChunks(ids)) yield [projectId, chunk];
}

const CALL_COLUMNS = [
  "project_id", "id", "trace_id", "parent_id", "thread_id", "turn_id", "op_name", "display_name",
  "started_at", "ended_at", "exception", "attributes", "inputs", "output", "summary", "otel_dump",
  "wb_user_id", "wb_run_id", "wb_run_step", "wb_run_step_end", "json_paths", "json_values",
  "storage_size_bytes", "version", "json_long_paths", "json_long_hashes",
] as const;

const ROW_BYTES_GUESS = 2048;

/** A JSON field as the row holds it: the text the log handed over, or JSON.stringify's now. */
type RowJson = EncodedJson | string;

const rowJson = (field: JsonField<JsonValue>): RowJson => (field instanceof EncodedJson ? field : JSON.stringify(field));
const charsOf = (json: RowJson | null): number => (json === null ? 0 : typeof json === "string" ? json.length : json.chars);

function writeJson(out: RowBinaryWriter, json: RowJson | null, nullable: boolean): void {
  if (nullable) out.uint8(json === null ? 1 : 0);
  if (json === null) return;
  if (typeof json === "string") out.string(json);
  else out.rawRange(json.record, json.stringStart, json.textEnd);
}

/** Appends one `calls` row, fields in CALL_COLUMNS order. */
function writeCallRow(out: RowBinaryWriter, snapshot: CallSnapshot, version: number): void {
  const attributes = rowJson(snapshot.attributes);
  const inputs = rowJson(snapshot.inputs);
  const output = snapshot.ended_at === null ? null : rowJson(snapshot.output ?? null);
  const summary = snapshot.summary === null ? null : rowJson(snapshot.summary);
  const leaves = callLeaves(snapshot);
  out
    .string(snapshot.project_id)
    .string(snapshot.id)
    .string(snapshot.trace_id)
    .nullableString(snapshot.parent_id)
    .nullableString(snapshot.thread_id)
    .nullableString(snapshot.turn_id)
    .string(snapshot.op_name)
    .nullableString(snapshot.display_name)
    .int64(snapshot.started_at)
    .nullableInt64(snapshot.ended_at)
    .nullableString(snapshot.exception);
  writeJson(out, attributes, false);
  writeJson(out, inputs, false);
  writeJson(out, output, true);
  writeJson(out, summary, true);
  writeJson(out, snapshot.otel_dump === null ? null : rowJson(snapshot.otel_dump), true);
  out.nullableString(snapshot.wb_user_id).nullableString(snapshot.wb_run_id).nullableInt64(snapshot.wb_run_step).nullableInt64(snapshot.wb_run_step_end);
  writeLeafColumn(out, leaves, "paths");
  writeLeafColumn(out, leaves, "values");
  out.int64(charsOf(attributes) + charsOf(inputs) + charsOf(output) + charsOf(summary)).int64(version);
  writeLeafColumn(out, leaves, "longPaths");
  writeLeafColumn(out, leaves, "longHashes");
}

/** A part's leaves: encoded with its field (and the field, which holds the record), or flattened now. */
type PartLeaves = (EncodedJson & { readonly leaves: EncodedLeaves }) | FlattenedJson;
const isEncoded = (leaves: PartLeaves): leaves is EncodedJson & { readonly leaves: EncodedLeaves } => leaves instanceof EncodedJson;
const leafCount = (leaves: PartLeaves): number => (isEncoded(leaves) ? leaves.leaves.count : leaves.json_paths.length);
const longCount = (leaves: PartLeaves): number => (isEncoded(leaves) ? leaves.leaves.longCount : leaves.json_long_paths.length);

/**
 * The call's leaves (jsonLeaves.ts) part by part in PART_ORDER: a part the log handed over
 * encoded brings its own, the others are flattened now. Past the leaf budget, the whole call
 * is flattened again from its values, so the budget cuts exactly where flattenCallJson does.
 */
function callLeaves(snapshot: CallSnapshot): readonly PartLeaves[] {
  const parts = PART_ORDER.map((part): PartLeaves => {
    const field = snapshot[part];
    return field instanceof EncodedJson && field.leaves ? (field as EncodedJson & { readonly leaves: EncodedLeaves }) : flattenPart(field, part);
  });
  if (parts.reduce((sum, p) => sum + leafCount(p), 0) <= MAX_LEAVES) return parts;
  const values = Object.fromEntries(PART_ORDER.map((part) => [part, jsonFieldValue(snapshot[part] ?? null)]));
  return [flattenCallJson(values as Record<JsonPart, JsonValue>)];
}

type LeafColumn = "paths" | "values" | "longPaths" | "longHashes";
const FLAT_COLUMN: Record<LeafColumn, keyof FlattenedJson> = { paths: "json_paths", values: "json_values", longPaths: "json_long_paths", longHashes: "json_long_hashes" };

/** Where a column's share of encoded leaves lies in its record. */
function encodedRange(leaves: EncodedLeaves, column: LeafColumn): [number, number] {
  switch (column) {
    case "paths":
      return [leaves.pathsStart, leaves.valuesStart];
    case "values":
      return [leaves.valuesStart, leaves.longPathsStart];
    case "longPaths":
      return [leaves.longPathsStart, leaves.longHashesStart];
    case "longHashes":
      return [leaves.longHashesStart, leaves.end];
  }
}

/** One of the four leaf array columns, from each part's share. */
function writeLeafColumn(out: RowBinaryWriter, parts: readonly PartLeaves[], column: LeafColumn): void {
  const count = column === "paths" || column === "values" ? leafCount : longCount;
  out.arrayLength(parts.reduce((sum, p) => sum + count(p), 0));
  for (const part of parts) {
    if (isEncoded(part)) {
      const [start, end] = encodedRange(part.leaves, column);
      out.rawRange(part.record, start, end);
    } else for (const value of part[FLAT_COLUMN[column]]) out.string(value);
  }
}

/** `calls` rows in RowBinary, columns in CALL_COLUMNS order. */
export function callRowsBinary(snapshots: readonly { snapshot: CallSnapshot; version: number }[]): Buffer {
  const out = new RowBinaryWriter(snapshots.length * ROW_BYTES_GUESS);
  for (const s of snapshots) writeCallRow(out, s.snapshot, s.version);
  return out.bytes();
}

const INDEX_COLUMNS = ["project_id", "id", "started_at", "trace_id", "parent_id"] as const;

function writeIndexRow(out: RowBinaryWriter, s: CallSnapshot): void {
  out.string(s.project_id).string(s.id).int64(s.started_at).string(s.trace_id).nullableString(s.parent_id);
}

/** Storage operations of the worker's call merge. */
export class CallsWriteRepository {
  constructor(private readonly store: ClickHouseStore) {}

  /** Ends and updates parked for these calls because they came before the start. */
  async findOrphans(keys: readonly CallKey[]): Promise<Map<string, ParkedPart[]>> {
    const found = new Map<string, ParkedPart[]>();
    for (const [projectId, ids] of byProject(keys)) {
      const pb = new ParamBuilder();
      const rows = await this.store.rows<{ id: string; event: string }>("worker_find_orphans", {
        sql: `SELECT id, event FROM call_orphan_parts
              WHERE project_id = ${pb.str(projectId)} AND id IN ${pb.inStrings(ids)}
              ORDER BY received_at`,
        params: pb.params,
      });
      for (const row of rows) {
        const key = callKey({ project_id: projectId, id: row.id });
        const list = found.get(key) ?? [];
        list.push(JSON.parse(row.event) as ParkedPart);
        found.set(key, list);
      }
    }
    return found;
  }

  /** The stored version of each call that exists, found through the call index. */
  async findSnapshots(keys: readonly CallKey[]): Promise<Map<string, CallSnapshot>> {
    const found = new Map<string, CallSnapshot>();
    for (const [projectId, ids] of byProject(keys)) {
      const pb = new ParamBuilder();
      const project = pb.str(projectId);
      const rows = await this.store.rows<VersionedCallRow>("worker_find_calls", {
        sql: `SELECT * FROM calls FINAL
              WHERE project_id = ${project}
                AND started_at IN (SELECT started_at FROM call_index WHERE project_id = ${project} AND id IN ${pb.inStrings(ids)})
                AND id IN ${pb.inStrings(ids)}`,
        params: pb.params,
      });
      for (const row of rows) found.set(callKey(row), rowToSnapshot(row));
    }
    return found;
  }

  async insertSnapshots(snapshots: readonly { snapshot: CallSnapshot; version: number }[]): Promise<void> {
    if (snapshots.length === 0) return;
    await this.store.insertRowBinary("worker_insert_calls", "calls", CALL_COLUMNS, callRowsBinary(snapshots), snapshots.length);
  }

  async insertIndex(snapshots: readonly CallSnapshot[]): Promise<void> {
    if (snapshots.length === 0) return;
    const out = new RowBinaryWriter();
    for (const s of snapshots) writeIndexRow(out, s);
    await this.store.insertRowBinary("worker_insert_call_index", "call_index", INDEX_COLUMNS, out.bytes(), snapshots.length);
  }

  async insertOrphans(parts: readonly ParkedPart[], receivedAt: number): Promise<void> {
    await this.store.insert(
      "worker_insert_orphans",
      "call_orphan_parts",
      parts.map((p) => ({ project_id: p.project_id, id: p.id, received_at: receivedAt, event: JSON.stringify(p) })),
    );
  }

  async insertDeletions(events: readonly CallsDeleteEvent[]): Promise<void> {
    await this.store.insert(
      "worker_insert_deletions",
      "call_deletions",
      events.flatMap((e) => e.ids.map((id) => ({ project_id: e.project_id, id, deleted_at: e.deleted_at, wb_user_id: e.wb_user_id }))),
    );
  }
}
