import {
  addCallsOp, itemsQueryOp, progressOp, queueCreateOp, queueDeleteOp, queueReadOp, queuesQueryOp, queuesStatsOp, queueUpdateOp,
} from "../contract/annotationQueues.js";
import type { HttpApi } from "../http/app.js";
import { AnnotationQueuesRepository } from "../store/annotationQueues/annotationQueuesRepository.js";
import { toQueueSchema } from "../store/annotationQueues/annotationRows.js";
import { CallsReadRepository } from "../store/calls/callsRead.js";
import type { ClickHouseStore } from "../store/clickhouse.js";
import type { Clock } from "../times.js";
import { writeStream } from "./jsonLines.js";
import type { ProjectRetention } from "../store/projects/retention.js";

export interface AnnotationQueuesDeps {
  readonly store: ClickHouseStore;
  /** Each project's retention (what its calls reads leave out). */
  readonly retention: ProjectRetention;
  /** Server time (tests pass their own); defaults to the system clock. */
  readonly clock?: Clock;
}

/**
 * `/annotation_queues/*` (contract: contract/annotationQueues.ts, storage:
 * store/annotationQueues/). Writes go straight to ClickHouse: each answer is visible to the
 * next request. `created_by`, `added_by` and the annotator are always the key's user.
 */
export function mountAnnotationQueueRoutes(api: HttpApi, deps: AnnotationQueuesDeps): void {
  const repo = new AnnotationQueuesRepository(deps.store, new CallsReadRepository(deps.store, deps.retention), deps.retention, deps.clock);

  api.mount(queueCreateOp, async ({ body }, ctx) => ({ id: await repo.create(body.project_id, body, ctx.principal.username) }));

  api.mount(queuesQueryOp, async ({ body }, ctx) => {
    const queues = repo.query({ projectId: body.project_id, name: body.name, sortBy: body.sort_by, limit: body.limit, offset: body.offset });
    await writeStream(ctx.res, ctx.req.headers.accept, queues);
  });

  api.mount(queueReadOp, async ({ params, query }) => ({ queue: toQueueSchema(await repo.read(query.project_id, params.queue_id)) }));

  api.mount(queueUpdateOp, async ({ params, body }) => ({
    queue: await repo.update(body.project_id, params.queue_id, {
      name: body.name ?? undefined, description: body.description ?? undefined, scorer_refs: body.scorer_refs ?? undefined,
    }),
  }));

  api.mount(queueDeleteOp, async ({ params, query }) => ({ queue: await repo.delete(query.project_id, params.queue_id) }));

  api.mount(queuesStatsOp, async ({ body }) => ({ stats: await repo.stats(body.project_id, body.queue_ids) }));

  api.mount(addCallsOp, async ({ params, body }, ctx) =>
    repo.addCalls(body.project_id, params.queue_id, body.call_ids, body.display_fields, ctx.principal.username));

  api.mount(itemsQueryOp, async ({ params, body }) => ({
    items: await repo.items({
      projectId: body.project_id, queueId: params.queue_id, filter: body.filter, sortBy: body.sort_by,
      limit: body.limit, offset: body.offset, includePosition: body.include_position,
    }),
  }));

  api.mount(progressOp, async ({ params, body }, ctx) => ({
    item: await repo.setProgress(body.project_id, params.queue_id, params.item_id, ctx.principal.username, body.annotation_state),
  }));
}
