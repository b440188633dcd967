import { JsonObject, ProjectId, SortBy } from "./common.js";
import { BODY_PROJECT, operation } from "./operation.js";
import { z } from "./zod.js";

/**
 * Table operations (spec: tracing-api.md, "Objects, refs, digests"). A table is an ordered
 * list of rows (JSON objects); rows are content-addressed (row digest) and shared by every
 * table of a project that holds them; a table's digest is that of its row digests in order.
 * Digests are computed over the rows as sent (lossless: `1.0` stays a float), so these
 * operations keep the request text (`keepBodyText`). What each one means is written in
 * services/query/tablesRoutes.ts and store/tables/.
 */

const TAG = "Tables";

/** Row digests a filter or a stats request may name in one request (they are named in SQL). */
export const MAX_DIGESTS_PER_FILTER = 1000;
export const MAX_SORT_FIELDS = 5;

const Digest = z.string().min(1).max(128);
const ExpectedDigest = Digest.nullish().openapi({ description: "The digest the client computed; a different one is refused with 400 and nothing is written" });
const Row = JsonObject.openapi({ description: "A row: any JSON object, digested as sent" });
const Index = z.number().int();

export const TableSchemaForInsert = z
  .object({
    project_id: ProjectId,
    rows: z.array(Row),
    expected_digest: ExpectedDigest,
  })
  .openapi("TableSchemaForInsert");

export const TableCreateReq = z.object({ table: TableSchemaForInsert }).openapi("TableCreateReq");
export const TableCreateRes = z.object({ digest: z.string(), row_digests: z.array(z.string()) }).openapi("TableCreateRes");

export const TableCreateFromDigestsReq = z
  .object({
    project_id: ProjectId,
    row_digests: z.array(Digest).openapi({ description: "Digests of rows already stored in the project, in table order" }),
    expected_digest: ExpectedDigest,
  })
  .openapi("TableCreateFromDigestsReq");
export const TableCreateFromDigestsRes = z.object({ digest: z.string() }).openapi("TableCreateFromDigestsRes");

export const TableAppendSpec = z.object({ append: z.object({ row: Row }) }).openapi("TableAppendSpec");
export const TablePopSpec = z.object({ pop: z.object({ index: Index }) }).openapi("TablePopSpec");
export const TableInsertSpec = z.object({ insert: z.object({ index: Index, row: Row }) }).openapi("TableInsertSpec");
export const TableUpdateSpec = z.union([TableAppendSpec, TablePopSpec, TableInsertSpec]);
export type TableUpdateSpec = z.infer<typeof TableUpdateSpec>;

export const TableUpdateReq = z
  .object({
    project_id: ProjectId,
    base_digest: Digest,
    updates: z.array(TableUpdateSpec).openapi({ description: "Applied in order; each index refers to the table as the previous updates left it" }),
  })
  .openapi("TableUpdateReq");
export const TableUpdateRes = z
  .object({
    digest: z.string(),
    updated_row_digests: z.array(z.string()).openapi({ description: "Per update: the appended or inserted row's digest, or the popped row's" }),
  })
  .openapi("TableUpdateRes");

export const TableRowFilter = z
  .object({ row_digests: z.array(Digest).max(MAX_DIGESTS_PER_FILTER).nullish() })
  .openapi("TableRowFilter");

export const TableQueryReq = z
  .object({
    project_id: ProjectId,
    digest: Digest,
    filter: TableRowFilter.nullish(),
    limit: z.number().int().min(0).nullish(),
    offset: z.number().int().min(0).nullish(),
    sort_by: z
      .array(SortBy)
      .max(MAX_SORT_FIELDS)
      .nullish()
      .openapi({ description: "Fields are paths inside the row (`question`, `meta.score`); default: table order" }),
  })
  .openapi("TableQueryReq");
export type TableQueryReq = z.infer<typeof TableQueryReq>;

export const TableRowSchema = z
  .object({ digest: z.string(), val: z.unknown(), original_index: z.number().int().openapi({ description: "0-based position in the table" }) })
  .openapi("TableRowSchema");
export const TableQueryRes = z.object({ rows: z.array(TableRowSchema) }).openapi("TableQueryRes");

export const TableQueryStatsReq = z.object({ project_id: ProjectId, digest: Digest }).openapi("TableQueryStatsReq");
export const TableQueryStatsRes = z.object({ count: z.number().int() }).openapi("TableQueryStatsRes");

export const TableQueryStatsBatchReq = z
  .object({
    project_id: ProjectId,
    digests: z.array(Digest).max(MAX_DIGESTS_PER_FILTER).default([]),
    include_storage_size: z.boolean().default(false),
  })
  .openapi("TableQueryStatsBatchReq");
export const TableStatsRow = z
  .object({
    digest: z.string(),
    count: z.number().int(),
    storage_size_bytes: z.number().int().optional().openapi({ description: "With include_storage_size: bytes of the rows' JSON, each row counted at every position" }),
  })
  .openapi("TableStatsRow");
export const TableQueryStatsBatchRes = z
  .object({ tables: z.array(TableStatsRow).openapi({ description: "In request order; unknown digests are left out" }) })
  .openapi("TableQueryStatsBatchRes");

const tableOperation = { tag: TAG, method: "post", scope: BODY_PROJECT } as const;

export const tableCreateOp = operation({
  ...tableOperation,
  id: "table_create",
  path: "/table/create",
  summary: "Create a table from its rows",
  body: TableCreateReq,
  role: "writer",
  scope: { kind: "projects", of: ({ body }) => [body.table.project_id] },
  response: TableCreateRes,
  keepBodyText: true,
});
export const tableCreateFromDigestsOp = operation({
  ...tableOperation,
  id: "table_create_from_digests",
  role: "writer",
  path: "/table/create_from_digests",
  summary: "Create a table from the digests of stored rows",
  body: TableCreateFromDigestsReq,
  response: TableCreateFromDigestsRes,
});
export const tableUpdateOp = operation({
  ...tableOperation,
  id: "table_update",
  role: "writer",
  path: "/table/update",
  summary: "Create a table from another by appending, popping and inserting rows",
  body: TableUpdateReq,
  response: TableUpdateRes,
  keepBodyText: true,
});
export const tableQueryOp = operation({
  ...tableOperation,
  id: "table_query",
  role: "viewer",
  path: "/table/query",
  summary: "Query a table's rows",
  body: TableQueryReq,
  response: TableQueryRes,
});
export const tableQueryStreamOp = operation({
  ...tableOperation,
  id: "table_query_stream",
  role: "viewer",
  path: "/table/query_stream",
  summary: "Query a table's rows, streamed as JSON lines",
  body: TableQueryReq,
  response: TableRowSchema,
  streamed: true,
});
export const tableQueryStatsOp = operation({
  ...tableOperation,
  id: "table_query_stats",
  role: "viewer",
  path: "/table/query_stats",
  summary: "Count a table's rows",
  body: TableQueryStatsReq,
  response: TableQueryStatsRes,
});
export const tableQueryStatsBatchOp = operation({
  ...tableOperation,
  id: "table_query_stats_batch",
  role: "viewer",
  path: "/table/query_stats_batch",
  summary: "Count the rows (and storage size) of several tables",
  body: TableQueryStatsBatchReq,
  response: TableQueryStatsBatchRes,
});
