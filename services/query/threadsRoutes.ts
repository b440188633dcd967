import type { HttpApi } from "../http/app.js";
import type { ClickHouseStore } from "../store/clickhouse.js";

/** POST /threads/stream_query. */
export function mountThreadQueries(_api: HttpApi, _deps: { store: ClickHouseStore }): void {}
