import type { HttpApi } from "../http/app.js";
import type { ClickHouseStore } from "../store/clickhouse.js";
import type { CallEnricher } from "./callsRoutes.js";

/** POST /feedback/*. */
export function mountFeedbackRoutes(_api: HttpApi, _deps: { store: ClickHouseStore }): void {}

/** `include_feedback`: adds summary.weave.feedback to each call of a chunk. */
export function feedbackEnricher(_store: ClickHouseStore): (projectId: string) => CallEnricher {
  return () => async () => {};
}
