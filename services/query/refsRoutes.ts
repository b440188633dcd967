import type { Response } from "express";
import { refsReadBatchOp } from "../contract/refs.js";
import { ClientError } from "../errors.js";
import type { HttpApi } from "../http/app.js";
import { CallsReadRepository } from "../store/calls/callsRead.js";
import type { ClickHouseStore } from "../store/clickhouse.js";
import { ObjectsRepository } from "../store/objects/objectsRepository.js";
import { idChunks } from "../store/sql.js";
import { TablesRepository } from "../store/tables/tablesRepository.js";
import { toCallSchema } from "./callView.js";
import { RefResolver, type RefSources } from "./refValues.js";
import type { ProjectRetention } from "../store/projects/retention.js";

export interface RefsDeps {
  readonly store: ClickHouseStore;
  /** Each project's retention (what its calls reads leave out). */
  readonly retention: ProjectRetention;
}

/**
 * Most rows a bare table ref (`.../table/<digest>`, no row id) answers: its value is the list of
 * its rows, which for a large dataset belongs to `/table/query` (paged, streamed).
 */
export const MAX_TABLE_REF_ROWS = 10_000;

/**
 * `POST /refs/read_batch` (contract: contract/refs.ts; semantics: refValues.ts). Each ref's
 * value comes back in request order, as stored: object values and table rows are their
 * stored JSON text written verbatim (`1.0` stays a float, big integers exact). A table ref
 * answers the list of its rows (the Weave trace server refuses bare table refs), a call ref
 * the call as `/call/read` answers it.
 */
export function mountRefRoutes(api: HttpApi, deps: RefsDeps): void {
  const resolver = new RefResolver(storeSources(deps.store, deps.retention));
  api.mount(refsReadBatchOp, async ({ body }, ctx) => {
    const texts = await resolver.resolve(body.refs);
    sendJson(ctx.res, `{"vals":[${texts.join(",")}]}`);
  });
}

export function storeSources(store: ClickHouseStore, retention: ProjectRetention): RefSources {
  const objects = new ObjectsRepository(store);
  const tables = new TablesRepository(store);
  const calls = new CallsReadRepository(store, retention);
  return {
    async objects(projectId, versions) {
      return (await objects.readByRefs(projectId, versions)).map((v) => v?.valText ?? null);
    },
    async tableRows(projectId, tableDigest, rowDigests) {
      return tables.rowsByDigest(projectId, tableDigest, rowDigests);
    },
    async table(projectId, tableDigest) {
      const found = await tables.findTable(projectId, tableDigest);
      if (found === null) return null;
      if (found.rowCount > MAX_TABLE_REF_ROWS) {
        throw new ClientError(400, `table ${tableDigest} has ${found.rowCount} rows; a table ref answers at most ${MAX_TABLE_REF_ROWS}: read its rows with /table/query`);
      }
      const rows: string[] = [];
      for await (const row of tables.rows({ table: found.table })) rows.push(row.val);
      return `[${rows.join(",")}]`;
    },
    async calls(projectId, callIds) {
      const texts = new Map<string, string>();
      for (const ids of idChunks([...new Set(callIds)])) {
        const spec = { projectId, filter: { call_ids: ids }, sortBy: [{ field: "id", direction: "asc" as const }] };
        for await (const row of calls.stream(spec)) texts.set(row.id, JSON.stringify(toCallSchema(row)));
      }
      return texts;
    },
  };
}

/** Answers JSON text built around stored values. */
function sendJson(res: Response, text: string): void {
  res.status(200).type("application/json").send(text);
}
