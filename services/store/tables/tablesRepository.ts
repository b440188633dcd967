import { createHash, randomBytes } from "node:crypto";
import { rowDigest, tableDigest } from "../../digests.js";
import { ClientError, NotFoundError } from "../../errors.js";
import { MonotonicClock, type Clock } from "../../times.js";
import type { ClickHouseStore } from "../clickhouse.js";
import { RowBinaryWriter } from "../rowBinary.js";
import { idChunks, type BuiltQuery } from "../sql.js";
import { applyEdits, editedRowDigests, layout, type Edit, type Segment, type UpdatedRow } from "./tableEdits.js";
import { parseRow, rowKey, storedRow, type PreparedRow } from "./tableRows.js";
import { boundaryQuery, candidatesQuery, SORTED_PAGE_MAX_CANDIDATES, sortCandidates, sortedPageApplies } from "./sortedPage.js";
import {
  copyPositionsSql,
  missingRowsQuery,
  rowDigestsAtQuery,
  rowDigestsInOrderQuery,
  rowValuesQuery,
  storedRowsQuery,
  tableCountsQuery,
  heldRowValuesQuery,
  storedTableQuery,
  tablePositionsQuery,
  tableSizesQuery,
  type StoredTable,
  type TablePageSpec,
} from "./tablesQuery.js";

/** Rows read, stored and written per batch: at most this many, and about this many bytes of text. */
const ROW_BATCH = 1000;
const ROW_BATCH_CHARS = 4 * 1024 * 1024;
/** Positions per RowBinary insert. */
const POSITION_BATCH = 20_000;
/** Rows whose text one query reads while answering a table query. */
const VALUE_BATCH = 500;
/** How many unknown row digests a refusal names. */
const MISSING_SHOWN = 5;

/** Where a row sits in the request, for error messages. */
export type RowLoc = (string | number)[];

/** A row as the request carries it: its JSON text and where it sits. */
export interface RowText {
  readonly text: string;
  readonly loc: RowLoc;
}

export type TableUpdate =
  | { readonly kind: "append"; readonly row: RowText }
  | { readonly kind: "pop"; readonly index: number; readonly loc: RowLoc }
  | { readonly kind: "insert"; readonly index: number; readonly row: RowText; readonly loc: RowLoc };

/** A row of a table query's answer; `val` is the row's JSON text, answered verbatim. */
export interface TableRowText {
  readonly digest: string;
  readonly val: string;
  readonly originalIndex: number;
}

/** A table that exists, and its row count. */
export interface FoundTable {
  readonly table: StoredTable;
  readonly rowCount: number;
}

export interface TableStats {
  readonly digest: string;
  readonly count: number;
  readonly storageSizeBytes?: number;
}

/** The generation of a new write of a table's positions (schema.ts). */
const newGeneration = (): bigint => randomBytes(8).readBigUInt64LE(0);

function checkExpected(expected: string | null | undefined, actual: string): void {
  if (expected && expected !== actual) {
    throw new ClientError(400, `expected_digest ${expected} does not match the digest of the table sent, ${actual}; nothing was written`);
  }
}

/** Lets other requests run between batches of CPU-bound work on a large request. */
const yieldToOtherRequests = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** Consecutive slices of `items` of at most ROW_BATCH items and about ROW_BATCH_CHARS characters. */
function* rowBatches<T extends { readonly text: string }>(items: readonly T[]): Generator<{ from: number; items: T[] }> {
  let from = 0;
  while (from < items.length) {
    let to = from;
    let chars = 0;
    while (to < items.length && to - from < ROW_BATCH && (to === from || chars + items[to]!.text.length <= ROW_BATCH_CHARS)) {
      chars += items[to]!.text.length;
      to++;
    }
    yield { from, items: items.slice(from, to) };
    from = to;
  }
}

/**
 * Tables (schema.ts). Writes go straight to ClickHouse, so each answer is visible to the next
 * request. No request holds more than one batch of parsed rows, and no table's row list is
 * read into the service whole: positions are written in batches, copied between tables in
 * ClickHouse and read back as streams.
 */
export class TablesRepository {
  constructor(
    private readonly store: ClickHouseStore,
    private readonly clock: Clock = new MonotonicClock(),
  ) {}

  /**
   * `/table/create`. Two passes over the rows' text: the first reads and digests every row
   * (so a bad row or an `expected_digest` that differs is refused before anything is
   * written), the second stores them a batch at a time.
   */
  async createFromRows(projectId: string, rows: readonly RowText[], expected?: string | null): Promise<{ digest: string; rowDigests: string[] }> {
    const rowDigests: string[] = [];
    for (const batch of rowBatches(rows)) {
      for (const { text, loc } of batch.items) rowDigests.push(rowDigest(parseRow(text, loc)));
      await yieldToOtherRequests();
    }
    const digest = tableDigest(rowDigests);
    checkExpected(expected, digest);
    // A table that exists has all its rows stored.
    if ((await this.findTable(projectId, digest)) !== null) return { digest, rowDigests };
    for (const batch of rowBatches(rows)) {
      await this.storeRows(projectId, batch.items.map(({ text, loc }, i) => storedRow(parseRow(text, loc), rowDigests[batch.from + i]!)));
    }
    const table = { projectId, digest, generation: newGeneration() };
    await this.writePositions(table, rowDigests.map((d, idx) => ({ idx, digest: d })));
    await this.commitTable(table, rowDigests.length);
    return { digest, rowDigests };
  }

  /**
   * `/table/create_from_digests`: every digest must name a row the project stores (404
   * naming the first unknown ones). The positions are written before that check (the list
   * is too long to name in SQL); a refused table's generation is never committed, so they
   * are never read.
   */
  async createFromDigests(projectId: string, rowDigests: readonly string[], expected?: string | null): Promise<string> {
    const digest = tableDigest(rowDigests);
    checkExpected(expected, digest);
    if ((await this.findTable(projectId, digest)) !== null) return digest;
    const table = { projectId, digest, generation: newGeneration() };
    await this.writePositions(table, rowDigests.map((d, idx) => ({ idx, digest: d })));
    const missing = await this.store.rows<{ row_digest: string }>("table_missing_rows", missingRowsQuery(table, MISSING_SHOWN + 1));
    if (missing.length > 0) {
      const named = missing.slice(0, MISSING_SHOWN).map((m) => m.row_digest).join(", ");
      throw new NotFoundError(`row digests not found in project ${projectId}: ${named}${missing.length > MISSING_SHOWN ? " and more" : ""}`);
    }
    await this.commitTable(table, rowDigests.length);
    return digest;
  }

  /**
   * `/table/update`: the base table edited (tableEdits.ts), written as a new table. The
   * added rows are read twice, as `createFromRows` reads its rows: digested first, stored
   * a batch at a time once every update is known to apply.
   */
  async update(projectId: string, baseDigest: string, updates: readonly TableUpdate[]): Promise<{ digest: string; updatedRowDigests: string[] }> {
    const { table: base, rowCount: baseLength } = await this.requireTable(projectId, baseDigest);
    const added: (RowText & { digest: string })[] = [];
    const edits = updates.map((u): Edit => {
      if (u.kind === "pop") return u;
      const digest = rowDigest(parseRow(u.row.text, u.row.loc));
      added.push({ ...u.row, digest });
      return u.kind === "append" ? { kind: "append", digest } : { kind: "insert", index: u.index, digest };
    });
    const locOf = (i: number) => {
      const u = updates[i]!;
      return u.kind === "append" ? u.row.loc : u.loc;
    };
    const edited = applyEdits(baseLength, edits, locOf);
    const updatedRowDigests = await this.resolveUpdated(base, edited.updated);
    const digest = await this.editedDigest(base, edited.segments);
    if ((await this.findTable(projectId, digest)) === null) {
      const table = { projectId, digest, generation: newGeneration() };
      for (const batch of rowBatches(added)) {
        await this.storeRows(projectId, batch.items.map((row) => storedRow(parseRow(row.text, row.loc), row.digest)));
      }
      await this.writeEditedPositions(base, table, edited.segments);
      await this.commitTable(table, edited.length);
    }
    return { digest, updatedRowDigests };
  }

  /** The table and its row count; null when it does not exist. */
  async findTable(projectId: string, digest: string): Promise<FoundTable | null> {
    const [row] = await this.store.rows<{ row_count: string; generation: string }>("table_find", storedTableQuery(projectId, digest));
    return row ? { table: { projectId, digest, generation: BigInt(row.generation) }, rowCount: Number(row.row_count) } : null;
  }

  /** The table and its row count; 404 when it does not exist. */
  async requireTable(projectId: string, digest: string): Promise<FoundTable> {
    const found = await this.findTable(projectId, digest);
    if (found === null) throw new NotFoundError(`table ${digest} not found in project ${projectId}`);
    return found;
  }

  /**
   * The rows a table query answers, in order: the positions stream from ClickHouse, and
   * the rows' text is read VALUE_BATCH rows at a time. The query is built (and a bad sort
   * field refused) at the call; the table is one requireTable found (so that a 404 is
   * answered before anything is streamed).
   */
  rows(spec: TablePageSpec): AsyncGenerator<TableRowText> {
    const plain = tablePositionsQuery(spec);
    return sortedPageApplies(spec) ? this.sortedPage(spec, plain) : this.streamRows(spec.table.projectId, plain);
  }

  /** A shallow sorted page through the rows' sort keys (sortedPage.ts); the plain query when that does not apply. */
  private async *sortedPage(spec: TablePageSpec, plain: BuiltQuery): AsyncGenerator<TableRowText> {
    const [hi] = await this.store.rows<{ sort_number: number | string | null; sort_prefix: string }>("table_sorted_boundary", boundaryQuery(spec));
    const number = hi?.sort_number === null || hi?.sort_number === undefined ? null : Number(hi.sort_number);
    if (!hi || (number !== null && !Number.isFinite(number))) return yield* this.streamRows(spec.table.projectId, plain);
    const found = await this.store.rows<{ row_digest: string; position: string }>(
      "table_sorted_candidates",
      candidatesQuery(spec, { number, prefix: hi.sort_prefix }, SORTED_PAGE_MAX_CANDIDATES),
    );
    if (found.length > SORTED_PAGE_MAX_CANDIDATES || found.length < (spec.offset ?? 0) + spec.limit!) {
      return yield* this.streamRows(spec.table.projectId, plain);
    }
    const values = await this.values(spec.table.projectId, found.map((c) => c.row_digest));
    const candidates = found.flatMap((c) => {
      const val = values.get(c.row_digest);
      return val === undefined ? [] : [{ digest: c.row_digest, position: Number(c.position), val }];
    });
    for (const c of sortCandidates(candidates, spec.sortBy!, spec.offset ?? 0, spec.limit!)) {
      yield { digest: c.digest, val: c.val, originalIndex: c.position };
    }
  }

  private async values(projectId: string, rowDigests: readonly string[]): Promise<Map<string, string>> {
    const values = new Map<string, string>();
    for (const chunk of idChunks([...new Set(rowDigests)])) {
      for (const row of await this.store.rows<{ digest: string; val: string }>("table_query_values", rowValuesQuery(projectId, chunk))) {
        values.set(row.digest, row.val);
      }
    }
    return values;
  }

  private async *streamRows(projectId: string, positions: BuiltQuery): AsyncGenerator<TableRowText> {
    let batch: { row_digest: string; position: string }[] = [];
    for await (const position of this.store.stream<{ row_digest: string; position: string }>("table_query_positions", positions)) {
      batch.push(position);
      if (batch.length >= VALUE_BATCH) {
        yield* this.withValues(projectId, batch);
        batch = [];
      }
    }
    if (batch.length > 0) yield* this.withValues(projectId, batch);
  }

  /**
   * The text of the rows of one table named by these digests (as table-row refs name them),
   * by digest: a digest the table does not hold is absent; null when the table does not
   * exist. One round of queries for up to IDS_PER_QUERY digests: the table and its rows'
   * text are read at once.
   */
  async rowsByDigest(projectId: string, tableDigest: string, rowDigests: readonly string[]): Promise<Map<string, string> | null> {
    const chunks = [...idChunks([...new Set(rowDigests)])];
    const [found, ...parts] = await Promise.all([
      this.findTable(projectId, tableDigest),
      ...chunks.map((chunk) => this.store.rows<{ digest: string; val: string }>("table_rows_held", heldRowValuesQuery(projectId, tableDigest, chunk))),
    ]);
    return found === null ? null : new Map(parts.flat().map((row) => [row.digest, row.val]));
  }

  /** Stats of the tables named that exist, in request order (each once). */
  async stats(projectId: string, digests: readonly string[], includeSize: boolean): Promise<TableStats[]> {
    const unique = [...new Set(digests)];
    const counts = new Map<string, number>();
    const sizes = new Map<string, number>();
    for (const chunk of idChunks(unique)) {
      for (const row of await this.store.rows<{ digest: string; row_count: string }>("table_stats", tableCountsQuery(projectId, chunk))) {
        counts.set(row.digest, Number(row.row_count));
      }
      if (!includeSize) continue;
      for (const row of await this.store.rows<{ table_digest: string; size_bytes: string }>("table_sizes", tableSizesQuery(projectId, chunk))) {
        sizes.set(row.table_digest, Number(row.size_bytes));
      }
    }
    return unique.flatMap((digest) => {
      const count = counts.get(digest);
      if (count === undefined) return [];
      return [includeSize ? { digest, count, storageSizeBytes: sizes.get(digest) ?? 0 } : { digest, count }];
    });
  }

  private async *withValues(projectId: string, positions: readonly { row_digest: string; position: string }[]): AsyncGenerator<TableRowText> {
    const values = await this.values(projectId, positions.map((p) => p.row_digest));
    for (const p of positions) {
      const val = values.get(p.row_digest);
      if (val !== undefined) yield { digest: p.row_digest, val, originalIndex: Number(p.position) };
    }
  }

  /** Writes the rows the project does not store yet: their leaves first, then the rows. */
  private async storeRows(projectId: string, rows: readonly PreparedRow[]): Promise<void> {
    const unique = [...new Map(rows.map((r) => [r.digest, r])).values()];
    const stored = new Set<string>();
    for (const chunk of idChunks(unique.map((r) => r.digest))) {
      for (const row of await this.store.rows<{ digest: string }>("table_stored_rows", storedRowsQuery(projectId, chunk))) stored.add(row.digest);
    }
    const fresh = unique.filter((r) => !stored.has(r.digest));
    if (fresh.length === 0) return;
    const leaves = new RowBinaryWriter(256 * 1024);
    let leafCount = 0;
    for (const row of fresh) {
      leafCount += row.leafPaths.length;
      row.leafPaths.forEach((path, i) => leaves.string(projectId).string(path).uint64(row.key).string(row.leafValues[i]!));
    }
    await this.store.insertRowBinary("table_leaves_insert", "table_row_leaves", ["project_id", "path", "row_key", "value"], leaves.bytes(), leafCount);
    const createdAt = this.clock.nowMicros();
    const written = new RowBinaryWriter(256 * 1024);
    for (const row of fresh) written.string(projectId).string(row.digest).uint64(row.key).string(row.val).int64(row.sizeBytes).int64(createdAt);
    await this.store.insertRowBinary("table_rows_insert", "table_rows", ["project_id", "digest", "row_key", "val", "size_bytes", "created_at"], written.bytes(), fresh.length);
  }

  private async writePositions(table: StoredTable, positions: readonly { idx: number; digest: string }[]): Promise<void> {
    for (let from = 0; from < positions.length; from += POSITION_BATCH) {
      const writer = new RowBinaryWriter(256 * 1024);
      const slice = positions.slice(from, from + POSITION_BATCH);
      for (const { idx, digest } of slice) {
        writer.string(table.projectId).string(table.digest).uint64(table.generation).int64(idx).string(digest).uint64(rowKey(digest));
      }
      const columns = ["project_id", "table_digest", "generation", "idx", "row_digest", "row_key"];
      await this.store.insertRowBinary("table_positions_insert", "table_positions", columns, writer.bytes(), slice.length);
    }
  }

  /** The base's kept runs copied in ClickHouse (a bounded number of runs per statement), the added rows' positions written. */
  private async writeEditedPositions(base: StoredTable, table: StoredTable, segments: readonly Segment[]): Promise<void> {
    const { kept, added } = layout(segments);
    for (let from = 0; from < kept.length; from += ROW_BATCH) {
      await this.store.command("table_positions_copy", copyPositionsSql(base, table, kept.slice(from, from + ROW_BATCH)));
    }
    await this.writePositions(table, added);
  }

  /** Makes a table visible: written after its rows and positions. */
  private async commitTable(table: StoredTable, rowCount: number): Promise<void> {
    const row = new RowBinaryWriter(256).string(table.projectId).string(table.digest).int64(rowCount).uint64(table.generation).int64(this.clock.nowMicros());
    await this.store.insertRowBinary("table_insert", "tables", ["project_id", "digest", "row_count", "generation", "created_at"], row.bytes(), 1);
  }

  /** The table digest of an edited table, hashing the base's row digests as they stream by (tableDigest, incrementally). */
  private async editedDigest(base: StoredTable, segments: readonly Segment[]): Promise<string> {
    const hash = createHash("sha256");
    const needsBase = segments.some((s) => s.kind === "base");
    const baseDigests = needsBase ? this.rowDigestsInOrder(base) : (async function* () {})();
    for await (const digest of editedRowDigests(segments, baseDigests)) hash.update(digest, "utf8");
    return hash.digest("hex");
  }

  private async *rowDigestsInOrder(table: StoredTable): AsyncGenerator<string> {
    for await (const row of this.store.stream<{ row_digest: string }>("table_base_digests", rowDigestsInOrderQuery(table))) {
      yield row.row_digest;
    }
  }

  /** The digests /table/update answers: popped base rows looked up by position. */
  private async resolveUpdated(base: StoredTable, updated: readonly UpdatedRow[]): Promise<string[]> {
    const positions = updated.flatMap((u) => ("basePosition" in u ? [u.basePosition] : []));
    const atPosition = new Map<number, string>();
    for (let from = 0; from < positions.length; from += ROW_BATCH) {
      const query = rowDigestsAtQuery(base, positions.slice(from, from + ROW_BATCH));
      for (const row of await this.store.rows<{ position: string; row_digest: string }>("table_popped_rows", query)) atPosition.set(Number(row.position), row.row_digest);
    }
    return updated.map((u) => ("basePosition" in u ? atPosition.get(u.basePosition) ?? "" : u.digest));
  }
}
