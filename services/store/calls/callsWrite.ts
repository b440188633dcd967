import { CALL_FIELD_ENTRIES } from "../../contract/callFields.js";
import { compareCodePoints } from "../../digests.js";
import { callKey, idsByProject, projectsOf, type CallEndEvent, type CallKey, type CallUpdateEvent } from "../../queue/events.js";
import type { ClickHouseStore } from "../clickhouse.js";
import { rowsInOrder, RowBinaryWriter, RowBuffer } from "../rowBinary.js";
import { idChunks, ParamBuilder } from "../sql.js";
import { rowToSnapshot, type CallSnapshot, type VersionedCallRow, type WrittenCall } from "./callRows.js";
import { flattenCallRow } from "./flatten.js";
import { SpanResources, splitSpanResource, WrittenResources } from "./spanResources.js";
import { StoredAttributes, type RowWithStoredAttributes } from "./storedAttributes.js";
import { withoutIoCopies } from "./ioCopies.js";
import { RefBounds } from "./refTargets.js";

/** A `call_deletions` row: the call is hidden from every read. */
export interface CallDeletion extends CallKey {
  readonly deleted_at: number;
  readonly wb_user_id: string;
}

/** The tables keyed by call whose rows most projects lack: the worker looks up only the keys they may hold. */
export type KeyedTable = "call_orphan_parts" | "call_deletions";

/** A project holding at most this many rows of a `KeyedTable` has its ids read whole (a few hundred KB at most). */
export const FEW_KEYED_ROWS = 10_000;

/** A part kept in `call_orphan_parts` until its call's start is stored. */
export type ParkedPart = CallEndEvent | CallUpdateEvent;

/** Groups keys by project, each id once, in slices of IDS_PER_QUERY ids: one lookup query per slice. */
function* byProject(keys: readonly CallKey[]): Generator<[string, string[]]> {
  for (const [projectId, ids] of idsByProject(keys)) for (const chunk of idChunks(ids)) yield [projectId, chunk];
}

/** The call's fields, in contract/callFields.ts's order. */
const CALL_FIELD_NAMES = CALL_FIELD_ENTRIES.map(([name]) => name);

/** The call's fields, then what storage adds. */
const CALL_COLUMNS = [
  ...CALL_FIELD_NAMES,
  "json_paths", "json_values", "storage_size_bytes", "version", "json_long_paths", "json_long_hashes", "resource_hash",
] as const;

/**
 * What the worker reads of a stored call: its fields, version and span's resource hash, not
 * the leaves, which are derived again when the call is written (the `json_*` arrays are most
 * of a row's bytes, and a lookup reads every row of the granules its ids are in).
 */
const SNAPSHOT_COLUMNS = [...CALL_FIELD_NAMES, "version", "resource_hash"].join(", ");

/** Bytes per `calls` row the first insert's buffer is sized for; later ones for what the last insert's rows took, ROW_BYTES_MARGIN more. */
const ROW_BYTES_GUESS = 2048;
const ROW_BYTES_MARGIN = 1.25;

/** The JSON columns of a call's row, as stored (an unfinished call has no output). */
export interface CallJsonTexts {
  readonly attributes: string;
  readonly inputs: string;
  readonly output: string | null;
  readonly summary: string | null;
  readonly otelDump: string | null;
}

export function callJsonTexts(snapshot: CallSnapshot): CallJsonTexts {
  return {
    attributes: JSON.stringify(snapshot.attributes),
    inputs: JSON.stringify(snapshot.inputs),
    output: snapshot.ended_at === null ? null : JSON.stringify(snapshot.output ?? null),
    summary: snapshot.summary === null ? null : JSON.stringify(snapshot.summary),
    otelDump: snapshot.otel_dump === null ? null : JSON.stringify(snapshot.otel_dump),
  };
}

/**
 * Appends one `calls` row, fields in CALL_COLUMNS order, adds the targets it references to
 * `refs` and its span's resource to `resources` (spanResources.ts: the row keeps the rest of
 * its attributes). Written out, not derived from the table: on the insert hot path each
 * column is one direct call; the tests that read rows back check the order.
 */
function writeCallRow(out: RowBinaryWriter, refs: RefBounds, resources: SpanResources, snapshot: CallSnapshot, version: number): void {
  const split = splitSpanResource(snapshot.attributes);
  const stored = split ? { ...snapshot, attributes: split.own } : snapshot;
  const { attributes, inputs, output, summary, otelDump } = callJsonTexts(stored);
  const { columns: flat, pathsRowBinary, fileLeaves } = flattenCallRow(stored);
  const resourceText = split?.resource.text ?? "";
  if (split) resources.add(snapshot.project_id, split.resource);
  refs.add(
    {
      projectId: snapshot.project_id,
      opName: snapshot.op_name,
      values: flat.json_values,
      fileLeaves,
      jsonText: () => attributes + resourceText + inputs + (output ?? "") + (summary ?? ""),
    },
    snapshot.started_at,
  );
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
    .nullableString(snapshot.exception)
    .string(split ? withoutIoCopies(attributes, inputs, output) : attributes)
    .string(inputs)
    .nullableString(output)
    .nullableString(summary)
    .nullableString(otelDump)
    .nullableString(snapshot.wb_user_id)
    .nullableString(snapshot.wb_run_id)
    .nullableInt64(snapshot.wb_run_step)
    .nullableInt64(snapshot.wb_run_step_end)
    .raw(pathsRowBinary)
    .strings(flat.json_values)
    .int64(attributes.length + resourceText.length + inputs.length + (output?.length ?? 0) + (summary?.length ?? 0))
    .int64(version)
    .strings(flat.json_long_paths)
    .strings(flat.json_long_hashes)
    .string(split?.resource.hash ?? "");
}

const INDEX_COLUMNS = ["project_id", "id", "started_at", "trace_id", "parent_id"] as const;
/** Bytes per `call_index` row a new buffer is sized for (ids of 16 to 36 characters). */
const INDEX_ROW_BYTES_GUESS = 160;

const REF_BOUND_COLUMNS = ["project_id", "target", "started_at"] as const;

const SPAN_RESOURCE_COLUMNS = ["project_id", "hash", "text", "json_paths", "json_values", "json_long_paths", "json_long_hashes"] as const;

function writeIndexRow(out: RowBinaryWriter, s: WrittenCall): void {
  out.string(s.project_id).string(s.id).int64(s.started_at).string(s.trace_id).nullableString(s.parent_id);
}

/*
 * Rows are inserted in their table's sort key order: ClickHouse then writes the part as it
 * comes instead of sorting every column of the block first (docs/benchmarks.md, "Rows inserted
 * in sort key order"). Strings compare by code point, the order of their UTF-8 bytes, which is
 * ClickHouse's. The sort is stable: rows of one key keep their order (ReplacingMergeTree keeps
 * the last of equal versions).
 */
/** `calls`: ORDER BY (project_id, started_at, id) (schema.ts). */
type CallSortKey = Pick<CallSnapshot, "project_id" | "started_at" | "id">;
const inCallsOrder = (a: CallSortKey, b: CallSortKey): number =>
  compareCodePoints(a.project_id, b.project_id) || a.started_at - b.started_at || compareCodePoints(a.id, b.id);

/** `call_index`: ORDER BY (project_id, id). */
const inCallIndexOrder = (a: CallKey, b: CallKey): number => compareCodePoints(a.project_id, b.project_id) || compareCodePoints(a.id, b.id);

/** Where a call's row is among those made (`CallRows`). */
interface RowPlace {
  readonly call: WrittenCall;
  readonly start: number;
  readonly end: number;
}

/**
 * `calls` rows made one call at a time, each as soon as its call is merged (an OTLP export's
 * spans: `CallBatchWriter.writeWhole`): the call's objects are garbage before the next call's
 * are made, so that they die young instead of all of a write's calls outliving many young
 * collections (docs/benchmarks.md, "OTLP spans' rows made one at a time"). Put in sort key
 * order when inserted.
 */
export class CallRows {
  /** The calls whose rows were made, in the order made. */
  readonly calls: WrittenCall[] = [];
  /** The targets the rows reference (`call_ref_bounds`). */
  readonly refs = new RefBounds();
  /** The resources of the rows' spans (`span_resources`). */
  readonly resources = new SpanResources();
  private readonly places: RowPlace[] = [];

  constructor(readonly writer: RowBinaryWriter) {}

  add(snapshot: CallSnapshot, version: number): void {
    const start = this.writer.length;
    writeCallRow(this.writer, this.refs, this.resources, snapshot, version);
    const { project_id, id, trace_id, parent_id, thread_id, turn_id, started_at, ended_at } = snapshot;
    const call = { project_id, id, trace_id, parent_id, thread_id, turn_id, started_at, ended_at };
    this.calls.push(call);
    this.places.push({ call, start, end: this.writer.length });
  }

  /** The rows' places in sort key order. */
  inOrder(): RowPlace[] {
    return this.places.sort((a, b) => inCallsOrder(a.call, b.call));
  }
}

/** Storage operations of the worker's call merge. */
export class CallsWriteRepository {
  /** What a `calls` row took in the last insert: the next insert's buffer rarely grows (a copy of all rows so far). */
  private rowBytes = ROW_BYTES_GUESS;
  private readonly callRows = new RowBuffer();
  private readonly indexRows = new RowBuffer();
  private readonly writtenResources = new WrittenResources();
  private readonly storedAttributes: StoredAttributes;

  constructor(private readonly store: ClickHouseStore) {
    this.storedAttributes = new StoredAttributes(store);
  }

  /** Ends and updates parked for these calls because they came before the start (`keysHolding`: which are looked up). */
  async findOrphans(keys: readonly CallKey[]): Promise<Map<string, ParkedPart[]>> {
    return this.findParked(await this.keysHolding("call_orphan_parts", keys));
  }

  /** The parts parked for these calls, known to have some (parked by the caller): no check of their projects first. */
  async findParked(keys: readonly CallKey[]): Promise<Map<string, ParkedPart[]>> {
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

  /**
   * The stored version of each call that exists, found through the call index. Not `FINAL`:
   * that merges every row of the granules read, all columns, before the ids filter them; here
   * only the ids' rows are read whole, and the newest version of each kept (as `FINAL` keeps).
   */
  async findSnapshots(keys: readonly CallKey[]): Promise<Map<string, CallSnapshot>> {
    const found = new Map<string, CallSnapshot>();
    for (const [projectId, ids] of byProject(keys)) {
      const pb = new ParamBuilder();
      const project = pb.str(projectId);
      const rows = await this.store.rows<VersionedCallRow & RowWithStoredAttributes>("worker_find_calls", {
        sql: `SELECT ${SNAPSHOT_COLUMNS} FROM calls
              WHERE project_id = ${project}
                AND started_at IN (SELECT started_at FROM call_index WHERE project_id = ${project} AND id IN ${pb.inStrings(ids)})
                AND id IN ${pb.inStrings(ids)}
              ORDER BY version DESC
              LIMIT 1 BY id`,
        params: pb.params,
      });
      for (const row of await this.storedAttributes.complete(projectId, rows)) found.set(callKey(row), rowToSnapshot(row));
    }
    return found;
  }

  async insertSnapshots(snapshots: readonly { snapshot: CallSnapshot; version: number }[]): Promise<void> {
    if (snapshots.length === 0) return;
    const out = this.callRows.writer(Math.ceil(snapshots.length * this.rowBytes * ROW_BYTES_MARGIN));
    const refs = new RefBounds();
    const resources = new SpanResources();
    for (const s of [...snapshots].sort((a, b) => inCallsOrder(a.snapshot, b.snapshot))) writeCallRow(out, refs, resources, s.snapshot, s.version);
    const rows = out.bytes();
    this.rowBytes = rows.length / snapshots.length;
    await this.insertResources(resources);
    await Promise.all([
      this.store.insertRowBinary("worker_insert_calls", "calls", CALL_COLUMNS, rows, snapshots.length),
      this.insertRefBounds(refs),
    ]);
    this.callRows.giveBack(out);
  }

  async insertIndex(calls: readonly WrittenCall[]): Promise<void> {
    if (calls.length === 0) return;
    const out = this.indexRows.writer(calls.length * INDEX_ROW_BYTES_GUESS);
    for (const s of [...calls].sort(inCallIndexOrder)) writeIndexRow(out, s);
    await this.store.insertRowBinary("worker_insert_call_index", "call_index", INDEX_COLUMNS, out.bytes(), calls.length);
    this.indexRows.giveBack(out);
  }

  /** Rows to be made one call at a time (`CallRows`), then inserted with `insertRows`. */
  callRowsFor(calls: number): CallRows {
    return new CallRows(this.callRows.writer(Math.ceil(calls * this.rowBytes * ROW_BYTES_MARGIN)));
  }

  /** Rows made and not to be inserted: their buffer is lent again. */
  discardRows(rows: CallRows): void {
    this.callRows.giveBack(rows.writer);
  }

  /** The rows made, in sort key order, and their calls' `call_index` rows. */
  async insertRows(rows: CallRows): Promise<void> {
    if (rows.calls.length === 0) return;
    const made = rows.writer.bytes();
    this.rowBytes = made.length / rows.calls.length;
    await this.insertResources(rows.resources);
    await Promise.all([
      this.store.insertRowBinary("worker_insert_calls", "calls", CALL_COLUMNS, rowsInOrder(made, rows.inOrder()), rows.calls.length),
      this.insertIndex(rows.calls),
      this.insertRefBounds(rows.refs),
    ]);
    this.callRows.giveBack(rows.writer);
  }

  /**
   * The targets the calls of an insert reference, with the insert (a batch is stored again
   * when any of its inserts fails): a row per project and target of the batch, none for
   * calls that reference nothing (most OTLP spans).
   */
  private async insertRefBounds(refs: RefBounds): Promise<void> {
    const bounds = refs.rows();
    if (bounds.length === 0) return;
    const out = new RowBinaryWriter(bounds.length * 96);
    for (const b of bounds) out.string(b.project_id).string(b.target).int64(b.started_at);
    await this.store.insertRowBinary("worker_insert_call_ref_bounds", "call_ref_bounds", REF_BOUND_COLUMNS, out.bytes(), bounds.length);
  }

  /**
   * The rows' span resources this store has not been given yet, before the rows: a call read
   * back always finds its resource. A resource written twice (another process, a retried
   * batch) is one row once merged, and reads take any of its copies.
   */
  private async insertResources(resources: SpanResources): Promise<void> {
    const rows = this.writtenResources.unwritten(resources);
    if (rows.length === 0) return;
    const out = new RowBinaryWriter(rows.length * 1024);
    for (const [, { projectId, resource }] of rows) {
      const leaves = resource.leaves();
      out.string(projectId).string(resource.hash).string(resource.text).strings(leaves.json_paths).strings(leaves.json_values)
        .strings(leaves.json_long_paths).strings(leaves.json_long_hashes);
    }
    await this.store.insertRowBinary("worker_insert_span_resources", "span_resources", SPAN_RESOURCE_COLUMNS, out.bytes(), rows.length);
    this.writtenResources.remember(rows.map(([key]) => key));
  }

  async insertOrphans(parts: readonly ParkedPart[], receivedAt: number): Promise<void> {
    await this.store.insert(
      "worker_insert_orphans",
      "call_orphan_parts",
      parts.map((p) => ({ project_id: p.project_id, id: p.id, received_at: receivedAt, event: JSON.stringify(p) })),
    );
  }

  async insertDeletions(deletions: readonly CallDeletion[]): Promise<void> {
    await this.store.insert("worker_insert_deletions", "call_deletions", deletions);
  }

  /**
   * The keys that may have rows in `table` (parked parts, deletions: most projects have none,
   * and a project that has some has few). Each lookup first counts the rows of the keys'
   * projects, then reads the ids of those holding at most FEW_KEYED_ROWS and keeps the keys
   * among them; a project holding more keeps all its keys, looked up by id. The keys of a
   * project that parked one part (or deleted one call) are then not all named in a lookup
   * query on every batch until retention. Both reads happen at lookup time: a row written
   * before the lookup is found all the same.
   */
  private async keysHolding(table: KeyedTable, keys: readonly CallKey[]): Promise<CallKey[]> {
    if (keys.length === 0) return [];
    const counts = await this.rowsPerProject(table, projectsOf(keys));
    if (counts.size === 0) return [];
    const few = [...counts].filter(([, rows]) => rows <= FEW_KEYED_ROWS).map(([projectId]) => projectId);
    const held = await this.idsIn(table, few);
    return keys.filter((k) => {
      const rows = counts.get(k.project_id);
      return rows !== undefined && (rows > FEW_KEYED_ROWS || held.get(k.project_id)!.has(k.id));
    });
  }

  /** How many rows `table` holds per project, for those of these projects that hold any. */
  private async rowsPerProject(table: KeyedTable, projectIds: readonly string[]): Promise<Map<string, number>> {
    const counts = new Map<string, number>();
    for (const chunk of idChunks(projectIds)) {
      const pb = new ParamBuilder();
      const rows = await this.store.rows<{ project_id: string; rows: string | number }>(`worker_projects_in_${table}`, {
        sql: `SELECT project_id, count() AS rows FROM ${table} WHERE project_id IN ${pb.inStrings(chunk)} GROUP BY project_id`,
        params: pb.params,
      });
      for (const row of rows) counts.set(row.project_id, Number(row.rows));
    }
    return counts;
  }

  /** The ids of every row of these projects in `table`, by project (every project given has a set, maybe empty). */
  private async idsIn(table: KeyedTable, projectIds: readonly string[]): Promise<Map<string, Set<string>>> {
    const found = new Map(projectIds.map((projectId) => [projectId, new Set<string>()]));
    for (const chunk of idChunks(projectIds)) {
      const pb = new ParamBuilder();
      const rows = await this.store.rows<CallKey>(`worker_keys_in_${table}`, {
        sql: `SELECT DISTINCT project_id, id FROM ${table} WHERE project_id IN ${pb.inStrings(chunk)}`,
        params: pb.params,
      });
      for (const row of rows) found.get(row.project_id)?.add(row.id);
    }
    return found;
  }

  /** The stored deletions of any of these calls, by `callKey` (`keysHolding`: which are looked up). */
  async findDeletions(keys: readonly CallKey[]): Promise<Map<string, CallDeletion>> {
    const found = new Map<string, CallDeletion>();
    for (const [projectId, ids] of byProject(await this.keysHolding("call_deletions", keys))) {
      const pb = new ParamBuilder();
      const rows = await this.store.rows<{ id: string; deleted_at: string | number; wb_user_id: string }>("worker_find_deletions", {
        sql: `SELECT id, min(deleted_at) AS deleted_at, any(wb_user_id) AS wb_user_id FROM call_deletions
              WHERE project_id = ${pb.str(projectId)} AND id IN ${pb.inStrings(ids)} GROUP BY id`,
        params: pb.params,
      });
      for (const row of rows) found.set(callKey({ project_id: projectId, id: row.id }), { project_id: projectId, id: row.id, deleted_at: Number(row.deleted_at), wb_user_id: row.wb_user_id });
    }
    return found;
  }

  /** The stored calls whose parent is one of these calls, as (child, parent) pairs. */
  async findChildren(keys: readonly CallKey[]): Promise<{ readonly child: CallKey; readonly parentId: string }[]> {
    const found: { child: CallKey; parentId: string }[] = [];
    for (const [projectId, ids] of byProject(keys)) {
      const pb = new ParamBuilder();
      const rows = await this.store.rows<{ id: string; parent_id: string }>("worker_find_children", {
        sql: `SELECT DISTINCT id, assumeNotNull(parent_id) AS parent_id FROM call_index
              WHERE project_id = ${pb.str(projectId)} AND parent_id IN ${pb.inStrings(ids)}`,
        params: pb.params,
      });
      for (const row of rows) found.push({ child: { project_id: projectId, id: row.id }, parentId: row.parent_id });
    }
    return found;
  }
}
