import {
  tableCreateFromDigestsOp,
  tableCreateOp,
  tableQueryOp,
  tableQueryStatsBatchOp,
  tableQueryStatsOp,
  tableQueryStreamOp,
  tableUpdateOp,
  type TableQueryReq,
  type TableUpdateSpec,
} from "../contract/tables.js";
import type { HttpApi } from "../http/app.js";
import type { RequestContext } from "../http/operation.js";
import type { ClickHouseStore } from "../store/clickhouse.js";
import type { StoredTable, TablePageSpec } from "../store/tables/tablesQuery.js";
import { TablesRepository, type RowText, type TableRowText, type TableUpdate } from "../store/tables/tablesRepository.js";
import type { Clock } from "../times.js";
import { documentSpan, elementSpans, pathSpan, type Span } from "./jsonSpans.js";
import { writeJsonTextArray, writeJsonTextStream } from "./jsonLines.js";

export interface TablesDeps {
  readonly store: ClickHouseStore;
  readonly clock?: Clock;
}

/**
 * POST /table/*. Rows are read from the request text, one at a time, losslessly (the parsed
 * body only validates the request's shape): a row's digest depends on how its numbers were
 * written. Rows are answered as stored, their JSON text written verbatim into the answer.
 *
 * Large tables: the body limit is MAX_BODY_BYTES for these routes too. Clients send a large
 * table as several `/table/create` requests of a bounded size and join their rows with
 * `/table/create_from_digests` (what the Weave Python client does, in chunks of ~10 MB),
 * or extend a table with `/table/update` appends; the service holds at most one batch of
 * parsed rows at a time beyond the request itself.
 */
export function mountTableRoutes(api: HttpApi, deps: TablesDeps): void {
  const repo = new TablesRepository(deps.store, deps.clock);

  api.mount(
    tableCreateOp,
    async ({ body }, ctx) => {
      const rows = rowTexts(ctx, ["table", "rows"], body.table.rows.length);
      const created = await repo.createFromRows(body.table.project_id, rows, body.table.expected_digest);
      return { digest: created.digest, row_digests: created.rowDigests };
    },
    { bodyFromText: withoutRows },
  );

  api.mount(tableCreateFromDigestsOp, async ({ body }) => {
    return { digest: await repo.createFromDigests(body.project_id, body.row_digests, body.expected_digest) };
  });

  api.mount(tableUpdateOp, async ({ body }, ctx) => {
    const updated = await repo.update(body.project_id, body.base_digest, tableUpdates(ctx, body.updates));
    return { digest: updated.digest, updated_row_digests: updated.updatedRowDigests };
  });

  api.mount(tableQueryOp, async ({ body }, ctx) => {
    const { table } = await repo.requireTable(body.project_id, body.digest);
    await writeJsonTextArray(ctx.res, '{"rows":[', "]}", rowJsonTexts(repo.rows(pageSpec(table, body))));
  });

  api.mount(tableQueryStreamOp, async ({ body }, ctx) => {
    const { table } = await repo.requireTable(body.project_id, body.digest);
    await writeJsonTextStream(ctx.res, ctx.req.headers.accept, rowJsonTexts(repo.rows(pageSpec(table, body))));
  });

  api.mount(tableQueryStatsOp, async ({ body }) => {
    return { count: (await repo.requireTable(body.project_id, body.digest)).rowCount };
  });

  api.mount(tableQueryStatsBatchOp, async ({ body }) => {
    const tables = await repo.stats(body.project_id, body.digests, body.include_storage_size);
    return {
      tables: tables.map((t) => ({ digest: t.digest, count: t.count, ...(t.storageSizeBytes === undefined ? {} : { storage_size_bytes: t.storageSizeBytes }) })),
    };
  });
}

/**
 * A /table/create body for validation without its rows: each row becomes `{}` (the rows are
 * read one at a time from the text by the handler, which refuses one that is not an object
 * at its place), so a 10 MB request is held as its text only, never also as parsed rows.
 */
function withoutRows(text: string): unknown {
  const rows = pathSpan(text, documentSpan(text), ["table", "rows"]);
  if (rows === null || text.charCodeAt(rows.start) !== 91) return JSON.parse(text);
  let count = 0;
  for (const _ of elementSpans(text, rows)) count++;
  return JSON.parse(`${text.slice(0, rows.start)}[${new Array<string>(count).fill("{}").join(",")}]${text.slice(rows.end)}`);
}

function pageSpec(table: StoredTable, req: TableQueryReq): TablePageSpec {
  return {
    table,
    rowDigests: req.filter?.row_digests,
    sortBy: req.sort_by,
    limit: req.limit,
    offset: req.offset,
  };
}

/** A row of the answer as JSON text, its `val` the stored text as is. */
async function* rowJsonTexts(rows: AsyncIterable<TableRowText>): AsyncGenerator<string> {
  for await (const row of rows) yield `{"digest":${JSON.stringify(row.digest)},"val":${row.val},"original_index":${row.originalIndex}}`;
}

function bodyTextOf(ctx: RequestContext): string {
  if (ctx.bodyText === undefined) throw new Error("table operations need the request text (keepBodyText)");
  return ctx.bodyText;
}

/** The text of the array at `path` of the body, element by element; it must hold `count` elements (the parsed body's). */
function arrayElements(text: string, path: readonly string[], count: number): Span[] {
  const array = pathSpan(text, documentSpan(text), path);
  const elements = array ? [...elementSpans(text, array)] : [];
  if (elements.length !== count) throw new Error(`the request text has ${elements.length} elements at ${path.join(".")}, the parsed body ${count}`);
  return elements;
}

function rowTexts(ctx: RequestContext, path: readonly string[], count: number): RowText[] {
  const text = bodyTextOf(ctx);
  return arrayElements(text, path, count).map((span, i) => ({ text: text.slice(span.start, span.end), loc: ["body", ...path, i] }));
}

/** The validated updates with the text of each row they carry. */
function tableUpdates(ctx: RequestContext, updates: readonly TableUpdateSpec[]): TableUpdate[] {
  const text = bodyTextOf(ctx);
  const elements = arrayElements(text, ["updates"], updates.length);
  const rowAt = (i: number, kind: "append" | "insert"): RowText => {
    const span = pathSpan(text, elements[i]!, [kind, "row"]);
    if (!span) throw new Error(`the request text has no row at updates.${i}.${kind}`);
    return { text: text.slice(span.start, span.end), loc: ["body", "updates", i, kind, "row"] };
  };
  return updates.map((update, i): TableUpdate => {
    if ("append" in update) return { kind: "append", row: rowAt(i, "append") };
    if ("pop" in update) return { kind: "pop", index: update.pop.index, loc: ["body", "updates", i, "pop", "index"] };
    return { kind: "insert", index: update.insert.index, row: rowAt(i, "insert"), loc: ["body", "updates", i, "insert", "index"] };
  });
}
