import { EmptyResponse } from "../contract/common.js";
import { FeedbackBatchCreateReq, FeedbackBatchCreateRes, FeedbackCreateReq, FeedbackCreateRes, FeedbackPayloadSchemaReq, FeedbackPayloadSchemaRes, FeedbackPurgeReq, FeedbackQueryReq, FeedbackQueryRes, FeedbackReplaceReq, FeedbackStatsReq, FeedbackStatsRes } from "../contract/feedback.js";
import type { HttpApi } from "../http/app.js";
import { operation } from "../http/operation.js";
import type { ClickHouseStore } from "../store/clickhouse.js";
import { FeedbackRepository } from "../store/feedback/feedbackRepository.js";
import { payloadSchema } from "../store/feedback/payloadSchema.js";
import { feedbackStats } from "../store/feedback/stats.js";
import { checkAll } from "../store/feedback/validate.js";
import type { CallEnricher } from "./callsRoutes.js";
import { MonotonicClock, type Clock } from "../times.js";
import { isJsonObject } from "../json.js";

const TAG = "Feedback";

export const feedbackCreateOp = operation({ id: "feedback_create", method: "post", path: "/feedback/create", summary: "Create feedback", tag: TAG, request: FeedbackCreateReq, response: FeedbackCreateRes });
export const feedbackBatchCreateOp = operation({ id: "feedback_batch_create", method: "post", path: "/feedback/batch/create", summary: "Create feedback in a batch (all or nothing)", tag: TAG, request: FeedbackBatchCreateReq, response: FeedbackBatchCreateRes });
export const feedbackQueryOp = operation({ id: "feedback_query", method: "post", path: "/feedback/query", summary: "Query feedback", tag: TAG, request: FeedbackQueryReq, response: FeedbackQueryRes });
export const feedbackPurgeOp = operation({ id: "feedback_purge", method: "post", path: "/feedback/purge", summary: "Delete the feedback a query matches", tag: TAG, request: FeedbackPurgeReq, response: EmptyResponse });
export const feedbackReplaceOp = operation({ id: "feedback_replace", method: "post", path: "/feedback/replace", summary: "Replace feedback: delete feedback_id, create the new one", tag: TAG, request: FeedbackReplaceReq, response: FeedbackCreateRes });
export const feedbackPayloadSchemaOp = operation({ id: "feedback_payload_schema", method: "post", path: "/feedback/payload_schema", summary: "Payload paths and their value types", tag: TAG, request: FeedbackPayloadSchemaReq, response: FeedbackPayloadSchemaRes });
export const feedbackStatsOp = operation({ id: "feedback_stats", method: "post", path: "/feedback/stats", summary: "Feedback statistics in time buckets", tag: TAG, request: FeedbackStatsReq, response: FeedbackStatsRes });

export interface FeedbackDeps {
  readonly store: ClickHouseStore;
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

  api.mount(feedbackCreateOp, async (req, ctx) => {
    ctx.project(req.project_id);
    const [item] = checkAll([req], () => ["body"]);
    const [created] = await repo.create([item!], ctx.principal.username);
    return created!;
  });

  api.mount(feedbackBatchCreateOp, async (req, ctx) => {
    for (const item of req.batch) ctx.project(item.project_id);
    const items = checkAll(req.batch, (i) => ["body", "batch", i]);
    return { res: await repo.create(items, ctx.principal.username) };
  });

  api.mount(feedbackReplaceOp, async (req, ctx) => {
    ctx.project(req.project_id);
    const { feedback_id: feedbackId, ...create } = req;
    const [item] = checkAll([create], () => ["body"]);
    return repo.replace(req.project_id, feedbackId, item!, ctx.principal.username);
  });

  api.mount(feedbackQueryOp, async (req, ctx) => {
    ctx.project(req.project_id);
    const result = await repo.query({
      projectId: req.project_id, fields: req.fields, query: req.query, sortBy: req.sort_by, limit: req.limit, offset: req.offset,
    });
    return { result };
  });

  api.mount(feedbackPurgeOp, async (req, ctx) => {
    ctx.project(req.project_id);
    await repo.purge(req.project_id, req.query);
    return {};
  });

  api.mount(feedbackPayloadSchemaOp, async (req, ctx) => {
    ctx.project(req.project_id);
    return payloadSchema(deps.store, req);
  });

  api.mount(feedbackStatsOp, async (req, ctx) => {
    ctx.project(req.project_id);
    return feedbackStats(deps.store, req, clock.nowMicros());
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
