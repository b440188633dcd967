import {
  CallCreateBatchReq, CallCreateBatchRes, CallEndReq, CallEndV2Req, CallsDeleteReq, CallsDeleteRes, CallStartReq, CallStartRes, CallStartV2Req,
  CallsUpsertCompleteReq, CallUpdateReq,
} from "../contract/calls.js";
import { EmptyResponse, V2ProjectParams } from "../contract/common.js";
import type { HttpApi } from "../http/app.js";
import { checkCallCreateBatch, checkCallEnd, checkCallStart } from "../contract/callsFastCheck.js";
import { BODY_PROJECT, operation, PATH_PROJECT } from "../contract/operation.js";
import { ValidationError } from "../errors.js";
import { type TraceEvent } from "../queue/events.js";
import type { EventPublisher } from "../queue/queue.js";
import { idMaker, toCompleteEvent, toEndEvent, toStartEvent } from "./callEvents.js";
import { nowMicros } from "../times.js";

const TAG = "Calls";

// Every write below is exact on a repeat under one retry id: ids it generates are derived from
// the retry id (callEvents.ts), and the merge rewrites the same call; the process remembers its
// answers besides. `/calls/delete` records its answer too.
export const callStartOp = operation({ id: "call_start", method: "post", path: "/call/start", summary: "Start a call", tag: TAG, body: CallStartReq, role: "writer", scope: { kind: "projects", of: ({ body }) => [body.start.project_id] }, response: CallStartRes, retries: "remembered", fastBody: checkCallStart, queued: true });
export const callEndOp = operation({ id: "call_end", method: "post", path: "/call/end", summary: "End a call", tag: TAG, body: CallEndReq, role: "writer", scope: { kind: "projects", of: ({ body }) => [body.end.project_id] }, response: EmptyResponse, retries: "remembered", fastBody: checkCallEnd, queued: true });
export const callUpsertBatchOp = operation({ id: "call_upsert_batch", method: "post", path: "/call/upsert_batch", summary: "Start and end calls in a batch", tag: TAG, body: CallCreateBatchReq, role: "writer", scope: { kind: "projects", of: ({ body }) => body.batch.map((item) => (item.mode === "start" ? item.req.start.project_id : item.req.end.project_id)) }, response: CallCreateBatchRes, retries: "remembered", fastBody: checkCallCreateBatch, queued: true });
export const callUpdateOp = operation({ id: "call_update", method: "post", path: "/call/update", summary: "Update a call's display name", tag: TAG, body: CallUpdateReq, role: "writer", scope: BODY_PROJECT, response: EmptyResponse, retries: "remembered", queued: true });
export const callsDeleteOp = operation({ id: "calls_delete", method: "post", path: "/calls/delete", summary: "Delete calls and all their descendants (also those still being stored, and children that arrive later). num_deleted counts the distinct ids asked for and accepted; descendants are not counted", tag: TAG, body: CallsDeleteReq, role: "admin", scope: BODY_PROJECT, response: CallsDeleteRes, retries: "recorded", queued: true });

// The Weave Python SDK's ingest (calls_complete mode and its eager path). The reference server
// hides v2 call/start and call/end from its OpenAPI document; they are listed here, since
// this document is for the people running the service, and no client is generated from it.
export const callsCompleteOp = operation({ id: "calls_complete", method: "post", path: "/v2/{entity}/{project}/calls/complete", summary: "Write finished calls, each start and end in one record", tag: TAG, params: V2ProjectParams, body: CallsUpsertCompleteReq, role: "writer", scope: PATH_PROJECT, response: EmptyResponse, retries: "remembered", queued: true });
export const callStartV2Op = operation({ id: "call_start_v2", method: "post", path: "/v2/{entity}/{project}/call/start", summary: "Start a call (eager ops, calls still running at shutdown)", tag: TAG, params: V2ProjectParams, body: CallStartV2Req, role: "writer", scope: PATH_PROJECT, response: CallStartRes, retries: "remembered", fastBody: checkCallStart, queued: true });
export const callEndV2Op = operation({ id: "call_end_v2", method: "post", path: "/v2/{entity}/{project}/call/end", summary: "End a call; with started_at, shown finished even before its start arrives", tag: TAG, params: V2ProjectParams, body: CallEndV2Req, role: "writer", scope: PATH_PROJECT, response: EmptyResponse, retries: "remembered", fastBody: checkCallEnd, queued: true });

/** A v2 request writes only into the project of its path. */
function checkPathProject(params: { entity: string; project: string }, projectIds: readonly string[], locOf: (i: number) => (string | number)[]): void {
  const path = `${params.entity}/${params.project}`;
  const wrong = projectIds.findIndex((id) => id !== path);
  if (wrong >= 0) throw ValidationError.at(locOf(wrong), `project_id ${projectIds[wrong]} is not the project of the path, ${path}`, "project_mismatch");
}

/** The write side of calls: validated requests become events on the queue. */
export function mountCallIngest(api: HttpApi, publisher: EventPublisher<TraceEvent>): void {
  api.mount(callStartOp, async ({ body: { start } }, ctx) => {
    const event = toStartEvent(start, ctx.principal.username, idMaker(ctx.retryId, callStartOp.id));
    await publisher.publish([event], ctx.bodyBytes);
    return { id: event.id, trace_id: event.trace_id };
  });

  api.mount(callEndOp, async ({ body: { end } }, ctx) => {
    await publisher.publish([toEndEvent(end)], ctx.bodyBytes);
    return {};
  });

  api.mount(callUpsertBatchOp, async ({ body: { batch } }, ctx) => {
    const ids = idMaker(ctx.retryId, callUpsertBatchOp.id);
    const events: TraceEvent[] = [];
    const res: ({ id: string; trace_id: string } | Record<string, never>)[] = [];
    batch.forEach((item, position) => {
      if (item.mode === "start") {
        const event = toStartEvent(item.req.start, ctx.principal.username, ids, position);
        events.push(event);
        res.push({ id: event.id, trace_id: event.trace_id });
      } else {
        events.push(toEndEvent(item.req.end));
        res.push({});
      }
    });
    await publisher.publish(events, ctx.bodyBytes);
    return { res };
  });

  api.mount(callUpdateOp, async ({ body: req }, ctx) => {
    await publisher.publish(
      [{ kind: "call_update", project_id: req.project_id, id: req.call_id, display_name: req.display_name, updated_at: nowMicros() }],
      ctx.bodyBytes,
    );
    return {};
  });

  api.mount(callsDeleteOp, async ({ body: req }, ctx) => {
    // The worker finds the descendants when it applies the delete (worker/callDeletes.ts).
    const ids = [...new Set(req.call_ids)];
    if (ids.length > 0) {
      await publisher.publish([{ kind: "calls_delete", project_id: req.project_id, ids, deleted_at: nowMicros(), wb_user_id: ctx.principal.username }], ctx.bodyBytes);
    }
    return { num_deleted: ids.length };
  });

  api.mount(callsCompleteOp, async ({ params, body: { batch } }, ctx) => {
    checkPathProject(params, batch.map((call) => call.project_id), (i) => ["body", "batch", i, "project_id"]);
    await publisher.publish(batch.map((call) => toCompleteEvent(call, ctx.principal.username)), ctx.bodyBytes);
    return {};
  });

  api.mount(callStartV2Op, async ({ params, body: { start } }, ctx) => {
    checkPathProject(params, [start.project_id], () => ["body", "start", "project_id"]);
    const event = toStartEvent(start, ctx.principal.username, idMaker(ctx.retryId, callStartV2Op.id));
    await publisher.publish([event], ctx.bodyBytes);
    return { id: event.id, trace_id: event.trace_id };
  });

  api.mount(callEndV2Op, async ({ params, body: { end } }, ctx) => {
    checkPathProject(params, [end.project_id], () => ["body", "end", "project_id"]);
    await publisher.publish([toEndEvent(end)], ctx.bodyBytes);
    return {};
  });
}
