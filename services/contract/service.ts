import { ProjectId } from "./common.js";
import { ANY_KEY, operation, PUBLIC } from "./operation.js";
import { z } from "./zod.js";

export const HealthRes = z
  .object({ status: z.enum(["ok", "degraded"]), clickhouse: z.boolean(), queue: z.boolean() })
  .openapi("HealthRes");

export const ServerInfoRes = z
  .object({ min_required_weave_python_version: z.string(), trace_server_version: z.string() })
  .openapi("ServerInfoRes");

export const ProjectsInfoReq = z.object({ project_ids: z.array(ProjectId).max(1000) }).openapi("ProjectsInfoReq");
export const ProjectsInfoRes = z
  .array(z.object({ external_project_id: z.string(), internal_project_id: z.string() }))
  .openapi("ProjectsInfoRes");

export const GeolocateRes = z
  .object({
    ip: z.string(),
    country: z.string().nullable(),
    region: z.string().nullable(),
    city: z.string().nullable(),
    timezone: z.string().nullable(),
  })
  .openapi("GeolocateRes");

export const QueueStoredQuery = z
  .object({ timeout_ms: z.coerce.number().int().min(0).max(600_000).default(30_000) })
  .openapi("QueueStoredQuery");
export const QueueStoredRes = z.object({ stored: z.literal(true) }).openapi("QueueStoredRes");

const TAG = "Service";

export const healthOp = operation({ id: "health", method: "get", path: "/health", summary: "Health: ClickHouse and the queue reachable", tag: TAG, response: HealthRes, role: null, scope: PUBLIC });
export const versionOp = operation({ id: "version", method: "get", path: "/version", summary: "Service version", tag: TAG, response: z.string(), role: "viewer", scope: ANY_KEY });
export const serverInfoOp = operation({ id: "server_info", method: "get", path: "/server_info", summary: "Server information", tag: TAG, response: ServerInfoRes, role: "viewer", scope: ANY_KEY });
export const projectsInfoOp = operation({ id: "projects_info", method: "post", path: "/service/projects_info", summary: "Internal ids of projects", tag: TAG, body: ProjectsInfoReq, role: "viewer", scope: ANY_KEY, response: ProjectsInfoRes });
export const geolocateOp = operation({ id: "geolocate", method: "get", path: "/geolocate", summary: "Location of the caller from its IP", tag: TAG, response: GeolocateRes, role: "viewer", scope: ANY_KEY });

export const queueStoredOp = operation({
  id: "queue_stored",
  method: "get",
  path: "/queue/stored",
  summary:
    "Wait until every write acknowledged before the request is stored and readable: by this process with the durable log, " +
    "by any ingest process with Kafka (the workers' committed offsets reach the topic's end as it was at the request). " +
    "A write is acknowledged once it is durable and stored a moment later; this is the barrier for a client that must read what it just wrote. " +
    "503 with Retry-After past timeout_ms.",
  tag: TAG,
  query: QueueStoredQuery,
  response: QueueStoredRes,
  role: "viewer",
  scope: ANY_KEY,
});
