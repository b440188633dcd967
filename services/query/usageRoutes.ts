import type { HttpApi } from "../http/app.js";
import type { ClickHouseStore } from "../store/clickhouse.js";

/** POST /calls/usage, /trace/usage, /calls/stats. */
export function mountUsageRoutes(_api: HttpApi, _deps: { store: ClickHouseStore }): void {}
