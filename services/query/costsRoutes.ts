import type { HttpApi } from "../http/app.js";
import type { ClickHouseStore } from "../store/clickhouse.js";
import type { CallEnricher } from "./callsRoutes.js";

/** POST /cost/create, /cost/query, /cost/purge. */
export function mountCostRoutes(_api: HttpApi, _deps: { store: ClickHouseStore }): void {}

/** `include_costs`: adds summary.weave.costs to each call of a chunk. */
export function costsEnricher(_store: ClickHouseStore): (projectId: string) => CallEnricher {
  return () => async () => {};
}
