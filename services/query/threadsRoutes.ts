import { threadsStreamQueryOp } from "../contract/threads.js";
import type { HttpApi } from "../http/app.js";
import type { ClickHouseStore } from "../store/clickhouse.js";
import { toThreadView, type ThreadRow } from "../store/threads/threadRows.js";
import { ThreadsReadRepository } from "../store/threads/threadsRead.js";
import type { ProjectRetention } from "../store/projects/retention.js";
import { writeStream } from "./jsonLines.js";

async function* views(rows: AsyncIterable<ThreadRow>) {
  for await (const row of rows) yield toThreadView(row);
}

/** POST /threads/stream_query. */
export function mountThreadQueries(api: HttpApi, deps: { store: ClickHouseStore; retention: ProjectRetention }): void {
  const reads = new ThreadsReadRepository(deps.store, deps.retention);
  api.mount(threadsStreamQueryOp, async ({ body: req }, ctx) => {
    const rows = reads.stream({ projectId: req.project_id, filter: req.filter, sortBy: req.sort_by, limit: req.limit, offset: req.offset });
    await writeStream(ctx.res, ctx.req.headers.accept, views(rows));
  });
}
