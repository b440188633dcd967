import {
  callEndOp, callEndV2Op, callsCompleteOp, callsDeleteOp, callStartOp, callStartV2Op, callUpdateOp, callUpsertBatchOp,
} from "../contract/callOperations.js";
import type { HttpApi } from "../http/app.js";
import { ValidationError } from "../errors.js";
import { type TraceEvent } from "../queue/events.js";
import type { EventPublisher } from "../queue/queue.js";
import { idMaker, toCompleteEvent, toEndEvent, toStartEvent, upsertEvents } from "./callEvents.js";
import { nowMicros } from "../times.js";

/** A v2 request writes only into the project of its path. */
function checkPathProject(params: { entity: string; project: string }, projectIds: readonly string[], locOf: (i: number) => (string | number)[]): void {
  const path = `${params.entity}/${params.project}`;
  const wrong = projectIds.findIndex((id) => id !== path);
  if (wrong >= 0) throw ValidationError.at(locOf(wrong), `project_id ${projectIds[wrong]} is not the project of the path, ${path}`, "project_mismatch");
}

/**
 * The write side of calls: validated requests become events on the queue. The batch handlers
 * are not async and keep only their answer while the publish waits for the log's sync: an async
 * function would keep the batch's parsed body alive until then (http/app.ts, `handOver`).
 */
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

  api.mount(callUpsertBatchOp, ({ body: { batch } }, ctx) => {
    const { events, res } = upsertEvents(batch, ctx.principal.username, idMaker(ctx.retryId, callUpsertBatchOp.id));
    return publisher.publish(events, ctx.bodyBytes).then(() => ({ res }));
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

  api.mount(callsCompleteOp, ({ params, body: { batch } }, ctx) => {
    checkPathProject(params, batch.map((call) => call.project_id), (i) => ["body", "batch", i, "project_id"]);
    return publisher.publish(batch.map((call) => toCompleteEvent(call, ctx.principal.username)), ctx.bodyBytes).then(() => ({}));
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
