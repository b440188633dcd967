import { feedbackBatchCreateOp, feedbackCreateOp, feedbackPayloadSchemaOp, feedbackPurgeOp, feedbackQueryOp, feedbackReplaceOp, feedbackStatsOp } from "../contract/feedback.js";
import type { HttpApi } from "../http/app.js";
import type { ClickHouseStore } from "../store/clickhouse.js";
import { FeedbackRepository } from "../store/feedback/feedbackRepository.js";
import { payloadSchema } from "../store/feedback/payloadSchema.js";
import { feedbackStats } from "../store/feedback/stats.js";
import type { ProjectRetention } from "../store/projects/retention.js";
import { checkAll } from "../store/feedback/validate.js";
import type { CallEnricher } from "./callsRoutes.js";
import { MonotonicClock, type Clock } from "../times.js";
import { isJsonObject } from "../json.js";

export interface FeedbackDeps {
  readonly store: ClickHouseStore;
  /** Each project's retention: feedback on calls past it is not read. */
  readonly retention: ProjectRetention;
  /** Server time (tests pass their own); defaults to the system clock. */
  readonly clock?: Clock;
}

/**
 * POST /feedback/*. Writes go to ClickHouse directly, so every answer is visible to the
 * next request. `wb_user_id` is always the key's user. Semantics: store/feedback/*.
 */
export function mountFeedbackRoutes(api: HttpApi, deps: FeedbackDeps): void {
  const clock = deps.clock ?? new MonotonicClock();
  const repo = new FeedbackRepository(deps.store, clock);

  api.mount(feedbackCreateOp, async ({ body: req }, ctx) => {
    const [item] = checkAll([req], () => ["body"]);
    const [created] = await repo.create([item!], ctx.principal.username);
    return created!;
  });

  api.mount(feedbackBatchCreateOp, async ({ body: req }, ctx) => {
    const items = checkAll(req.batch, (i) => ["body", "batch", i]);
    return { res: await repo.create(items, ctx.principal.username) };
  });

  api.mount(feedbackReplaceOp, async ({ body: req }, ctx) => {
    const { feedback_id: feedbackId, ...create } = req;
    const [item] = checkAll([create], () => ["body"]);
    return repo.replace(req.project_id, feedbackId, item!, ctx.principal.username);
  });

  api.mount(feedbackQueryOp, async ({ body: req }) => {
    const result = await repo.query({
      projectId: req.project_id, fields: req.fields, query: req.query, sortBy: req.sort_by, limit: req.limit, offset: req.offset,
      retainedFrom: await deps.retention.cutoff(req.project_id),
    });
    return { result };
  });

  api.mount(feedbackPurgeOp, async ({ body: req }) => {
    await repo.purge(req.project_id, req.query);
    return {};
  });

  api.mount(feedbackPayloadSchemaOp, async ({ body: req }) => {
    return payloadSchema(deps.store, req);
  });

  api.mount(feedbackStatsOp, async ({ body: req }) => {
    return feedbackStats(deps.store, req, clock.nowMicros(), await deps.retention.cutoff(req.project_id));
  });
}

/**
 * `include_feedback`: sets `summary.weave.feedback` of each call of a chunk to the list of
 * its live feedback (those whose weave_ref is `weave:///<project_id>/call/<id>`), oldest
 * first, each shaped as /feedback/query returns it; `[]` when it has none.
 */
export function feedbackEnricher(store: ClickHouseStore): (projectId: string) => CallEnricher {
  const repo = new FeedbackRepository(store);
  return (projectId) => async (rows, calls) => {
    const byCall = await repo.forCalls(projectId, rows.map((r) => r.id));
    calls.forEach((call, i) => {
      const id = rows[i]?.id;
      if (id === undefined) return;
      const summary = isJsonObject(call.summary) ? call.summary : {};
      const weave = isJsonObject(summary.weave) ? summary.weave : {};
      call.summary = { ...summary, weave: { ...weave, feedback: byCall.get(id) ?? [] } };
    });
  };
}
