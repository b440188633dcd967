import type { ClickHouseStore } from "../clickhouse.js";
import { ParamBuilder } from "../sql.js";
import { ROW_REF_TAIL } from "./expandedFields.js";
import type { CallRow } from "./callRows.js";
import { StoredAttributes, type RowWithStoredAttributes } from "./storedAttributes.js";
import { andRetainedSince, type ProjectRetention } from "../projects/retention.js";
import { callsCountQuery, callsPageQuery, DEFAULT_SORT, type CallsQuerySpec, type TimeWindow } from "./callsQuery.js";

export const WINDOWED_MAX_ROWS = 10_000;
const MAX_WINDOW_GROWTH = 64;
const EMPTY_WINDOW_GROWTH = 16;
/** Rows of a streamed page whose span resources are read at once. */
const STREAMED_ROWS_AT_ONCE = 1000;

/** A `calls` row as read: its span's resource hash beside the attributes (storedAttributes.ts). */
type StoredCallRow = CallRow & RowWithStoredAttributes;

/**
 * How much wider the next slice must be: scaled by how many of the wanted rows the last
 * slice held (a selective filter needs a much wider slice), with a margin of two.
 */
function windowGrowth(found: number, wanted: number): number {
  if (found === 0) return EMPTY_WINDOW_GROWTH;
  return Math.min(MAX_WINDOW_GROWTH, Math.max(2, Math.ceil((2 * wanted) / found)));
}

interface ProjectBounds {
  min: number;
  max: number;
  rows: number;
}

const BOUNDS_TTL_MS = 2_000;
const BOUNDS_CACHE_PROJECTS = 10_000;

/** Below this many stored rows a count is one plain FINAL query. */
const SPLIT_COUNT_MIN_ROWS = 200_000;

/** Two halves of the project's time range (ClickHouse here runs two threads per query). */
function countSlices(bounds: ProjectBounds | null): TimeWindow[] {
  if (!bounds || bounds.rows < SPLIT_COUNT_MIN_ROWS || bounds.max <= bounds.min) return [];
  const middle = Math.floor((bounds.min + bounds.max) / 2);
  return [{ toMicros: middle }, { fromMicros: middle + 1 }];
}

/** Read side of calls: pages, counts, single calls, descendants. */
export class CallsReadRepository {
  private readonly boundsCache = new Map<string, { at: number; bounds: Promise<ProjectBounds | null> }>();
  private readonly storedAttributes: StoredAttributes;

  constructor(
    private readonly store: ClickHouseStore,
    private readonly retention: ProjectRetention,
  ) {
    this.storedAttributes = new StoredAttributes(store);
  }

  /** The spec with the project's retention cutoff: every read here leaves out the calls past it. */
  async retained(spec: CallsQuerySpec): Promise<CallsQuerySpec> {
    return { ...spec, retainedFrom: await this.retention.cutoff(spec.projectId) };
  }

  /**
   * The project's started_at range and stored row count, at most BOUNDS_TTL_MS old: they
   * only size time windows and count slices, whose outer ends are open, so a stale range
   * costs a wider read at worst, never a wrong answer. (A stale null would hide new calls,
   * so a project without calls is read again each time.)
   */
  async bounds(projectId: string): Promise<ProjectBounds | null> {
    const now = Date.now();
    const cached = this.boundsCache.get(projectId);
    if (cached && now - cached.at < BOUNDS_TTL_MS) return cached.bounds;
    if (this.boundsCache.size >= BOUNDS_CACHE_PROJECTS) this.boundsCache.clear();
    const bounds = this.readBounds(projectId);
    this.boundsCache.set(projectId, { at: now, bounds });
    // An empty project is not remembered: its first calls must show at once.
    bounds.then((b) => b ?? this.boundsCache.delete(projectId), () => this.boundsCache.delete(projectId));
    return bounds;
  }

  private async readBounds(projectId: string): Promise<ProjectBounds | null> {
    const pb = new ParamBuilder();
    const [row] = await this.store.rows<{ min: string; max: string; rows: string }>("calls_bounds", {
      sql: `SELECT minMerge(min_started_at) AS min, maxMerge(max_started_at) AS max, countMerge(row_count) AS rows
            FROM project_call_bounds WHERE project_id = ${pb.str(projectId)} GROUP BY project_id`,
      params: pb.params,
    });
    return row ? { min: Number(row.min), max: Number(row.max), rows: Number(row.rows) } : null;
  }

  /**
   * Streams a page of calls, their attributes whole (storedAttributes.ts). When the order starts
   * with started_at and the page is bounded, it first reads only the newest (or oldest) slice
   * of time, sized from the project's density to hold the page several times over, and widens
   * the slice until the page is full or the slice covers the project: rows outside a slice
   * always sort after the rows inside it, so the first full page is the right one.
   */
  async *stream(asked: CallsQuerySpec): AsyncGenerator<CallRow> {
    const spec = await this.retained(asked);
    for await (const rows of this.pageRows(spec)) yield* await this.storedAttributes.complete(spec.projectId, rows);
  }

  /** The rows of the page as read, in slices of at most STREAMED_ROWS_AT_ONCE when streamed. */
  private async *pageRows(spec: CallsQuerySpec): AsyncGenerator<StoredCallRow[]> {
    const first = (spec.sortBy && spec.sortBy.length > 0 ? spec.sortBy : DEFAULT_SORT)[0]!;
    const wanted = (spec.offset ?? 0) + (spec.limit ?? Infinity);
    if (first.field !== "started_at" || wanted > WINDOWED_MAX_ROWS || spec.limit === 0) {
      let rows: StoredCallRow[] = [];
      for await (const row of this.store.stream<StoredCallRow>("calls_stream", callsPageQuery(spec, null, this.store.cluster !== null))) {
        if (rows.push(row) >= STREAMED_ROWS_AT_ONCE) yield rows.splice(0);
      }
      if (rows.length > 0) yield rows;
      return;
    }
    const stored = await this.bounds(spec.projectId);
    if (!stored) return;
    // Deletes (retention) do not move the stored minimum: the windows start at the cutoff.
    const bounds = { ...stored, min: Math.max(stored.min, spec.retainedFrom ?? stored.min) };
    const span = Math.max(1, bounds.max - bounds.min);
    let width = Math.ceil((span / Math.max(1, bounds.rows)) * wanted * 4);
    for (;;) {
      const covers = width >= span;
      const window: TimeWindow | null = covers
        ? null
        : first.direction === "desc"
          ? { fromMicros: bounds.max - width }
          : { toMicros: bounds.min + width };
      const rows = await this.store.rows<StoredCallRow>("calls_page_window", callsPageQuery(spec, window, this.store.cluster !== null));
      if (covers || rows.length >= (spec.limit ?? 0)) {
        yield rows;
        return;
      }
      width *= windowGrowth(rows.length, spec.limit ?? 1);
    }
  }

  async count(asked: CallsQuerySpec, withStorage: boolean): Promise<{ count: number; total_storage_size_bytes?: number }> {
    const spec = await this.retained(asked);
    const capped = spec.limit !== null && spec.limit !== undefined;
    const [bounds, deleted] = await Promise.all([capped ? null : this.bounds(spec.projectId), this.hasDeletions(spec.projectId)]);
    // A count read after this check is one that happened before any later delete.
    const counted = { ...spec, noDeletions: !deleted };
    const [row] = await this.store.rows<{ count: string; total_storage_size_bytes?: string }>("calls_count", callsCountQuery(counted, withStorage, countSlices(bounds)));
    return {
      count: Number(row?.count ?? 0),
      ...(withStorage ? { total_storage_size_bytes: Number(row?.total_storage_size_bytes ?? 0) } : {}),
    };
  }

  /** Whether any call of the project was ever deleted (then reads must leave them out). */
  private async hasDeletions(projectId: string): Promise<boolean> {
    const pb = new ParamBuilder();
    const rows = await this.store.rows<{ one: number }>("calls_has_deletions", {
      sql: `SELECT 1 AS one FROM call_deletions WHERE project_id = ${pb.str(projectId)} LIMIT 1`,
      params: pb.params,
    });
    return rows.length > 0;
  }

  /**
   * The distinct texts the project's calls hold at the JSON leaf `path` that start with
   * `prefix` (the refs of one project at an expand column), at most `max` + 1 of them so the
   * caller sees when there are more. Reads every version of the calls (no FINAL, deleted
   * ones too): a few refs more than the live calls hold only cost their resolution.
   * `rows`: "skip" leaves out the refs that end in a row id (ROW_REF_TAIL, resolved inside
   * ClickHouse instead); "roots" answers those refs' roots (the ref before the row id).
   */
  async refsAt(projectId: string, path: string, prefix: string, max: number, rows: "all" | "skip" | "roots" = "all"): Promise<string[]> {
    const pb = new ParamBuilder();
    const p = pb.str(path);
    const leaf = `json_values[indexOf(json_paths, ${p})]`;
    const tail = rows === "all" ? "" : pb.str(ROW_REF_TAIL);
    const text = rows === "roots" ? `replaceRegexpOne(${leaf}, ${tail}, '')` : leaf;
    const shape = rows === "skip" ? ` AND NOT match(${leaf}, ${tail})` : rows === "roots" ? ` AND match(${leaf}, ${tail})` : "";
    const rowsFound = await this.store.rows<{ ref: string }>("calls_refs_at", {
      sql: `SELECT DISTINCT ${text} AS ref FROM calls
            WHERE project_id = ${pb.str(projectId)} AND has(json_paths, ${p})
              AND substring(${leaf}, 1, ${pb.int(Buffer.byteLength(prefix))}) = ${pb.str(prefix)}${shape}
            LIMIT ${pb.count(max + 1)}`,
      params: pb.params,
    });
    return rowsFound.map((r) => r.ref);
  }

  /** Total stored bytes per trace, for `include_total_storage_size`. */
  async traceStorageSizes(projectId: string, traceIds: readonly string[]): Promise<Map<string, number>> {
    if (traceIds.length === 0) return new Map();
    const pb = new ParamBuilder();
    const project = pb.str(projectId);
    const retained = andRetainedSince("started_at", await this.retention.cutoff(projectId), pb);
    const rows = await this.store.rows<{ trace_id: string; size: string }>("calls_trace_sizes", {
      sql: `SELECT trace_id, sum(storage_size_bytes) AS size FROM calls FINAL
            WHERE project_id = ${project} AND trace_id IN ${pb.inStrings(traceIds)}${retained}
              AND id NOT IN (SELECT id FROM call_deletions WHERE project_id = ${project})
            GROUP BY trace_id`,
      params: pb.params,
    });
    return new Map(rows.map((r) => [r.trace_id, Number(r.size)]));
  }
}
