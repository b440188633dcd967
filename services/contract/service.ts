import { ProjectId } from "./common.js";
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
