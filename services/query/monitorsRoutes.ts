import { monitorStatusOp } from "../contract/monitors.js";
import { NotFoundError } from "../errors.js";
import type { HttpApi } from "../http/app.js";
import { isJsonObject, type JsonObject } from "../json.js";
import type { ClickHouseStore } from "../store/clickhouse.js";
import { FeedbackRepository } from "../store/feedback/feedbackRepository.js";
import { MONITOR_CLASS } from "../store/monitors/monitorsQuery.js";
import { MonitorsRepository } from "../store/monitors/monitorsRepository.js";
import { ObjectsRepository } from "../store/objects/objectsRepository.js";
import { objectRefOf } from "../store/v2/v2Objects.js";
import { microsToIso } from "../times.js";
import { EvalObjects } from "../worker/jobs/evalObjects.js";
import { monitorSpec, resolveScorers } from "../worker/monitors/monitorSpec.js";

/**
 * `/monitors/status` (contract/monitors.ts): read at request time from what is stored, the
 * version's scorers resolved as the worker resolves them (worker/monitors/monitorSpec.ts) and
 * its scores counted from the feedback it triggered; nothing is scored here.
 */
export function mountMonitorRoutes(api: HttpApi, deps: { store: ClickHouseStore }): void {
  const objects = new ObjectsRepository(deps.store);
  const monitors = new MonitorsRepository(deps.store);
  const evalObjects = new EvalObjects(deps.store);
  const feedback = new FeedbackRepository(deps.store);

  api.mount(monitorStatusOp, async ({ body }) => {
    const projectId = body.project_id;
    const ref = objectRefOf(projectId, body.monitor_ref, ["body", "monitor_ref"]);
    const [stored] = await objects.readByRefs(projectId, [{ objectId: ref.name, digest: ref.digest }]);
    const val: unknown = stored ? JSON.parse(stored.valText) : null;
    if (!isJsonObject(val) || (val as JsonObject)._class_name !== MONITOR_CLASS) throw new NotFoundError(`${body.monitor_ref} names no monitor of project ${projectId}`);
    const spec = monitorSpec({ projectId, name: ref.name, digest: ref.digest, createdAt: 0, wbUserId: "", val: val as JsonObject });
    const [latest, scorers, stats] = await Promise.all([monitors.latest(projectId, ref.name), resolveScorers(evalObjects, spec), feedback.triggerStats(projectId, spec.ref)]);
    return {
      active: spec.active && latest?.digest === ref.digest,
      scored: stats.count,
      last_scored_at: stats.lastAt === null ? null : microsToIso(stats.lastAt),
      unsupported_scorers: scorers.unsupported,
      filter_error: spec.filterError,
    };
  });
}
