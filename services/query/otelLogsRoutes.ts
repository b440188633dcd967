import { callLogRecordsOp } from "../contract/otelLogs.js";
import type { HttpApi } from "../http/app.js";
import type { ClickHouseStore } from "../store/clickhouse.js";
import { OtelLogsRepository } from "../store/otelLogs/otelLogsRepository.js";
import type { ProjectRetention } from "../store/projects/retention.js";
import { microsToIso } from "../times.js";

/** POST /call/log_records. */
export function mountOtelLogsRoutes(api: HttpApi, deps: { store: ClickHouseStore; retention: ProjectRetention }): void {
  const logs = new OtelLogsRepository(deps.store);
  api.mount(callLogRecordsOp, async ({ body: req }) => {
    const records = (await logs.forSpans(req.project_id, [req.call_id], false, await deps.retention.cutoff(req.project_id))).get(req.call_id) ?? [];
    return {
      records: records.map((r) => ({
        time: microsToIso(r.time), trace_id: r.trace_id, event_name: r.event_name, severity_number: r.severity_number,
        severity_text: r.severity_text, body: r.body, attributes: r.attributes, scope_name: r.scope_name,
      })),
    };
  });
}
