import { z } from "./zod.js";
import { isoToMicros } from "../times.js";
import { isJsonObject } from "../json.js";

export const ProjectId = z
  .string()
  .regex(/^[^/\s]+\/[^/\s]+$/, "must be <entity>/<project>")
  .openapi({ example: "acme/agents" });

/** `/v2/{entity}/{project}/...`: the project named by the path (scope: PATH_PROJECT). */
const PathSegment = z.string().regex(/^[^/\s]+$/, "must be one path segment without whitespace");
export const V2ProjectParams = z.object({ entity: PathSegment, project: PathSegment });

export const Datetime = z
  .string()
  .refine((s) => isoToMicros(s) !== null, "must be an ISO 8601 timestamp")
  .openapi({ example: "2026-11-21T10:00:00.123456Z" });

/**
 * Any JSON object. A constant-time check rather than `z.record`, which walks and copies
 * every key: request bodies are parsed JSON, so every value inside is JSON already.
 */
export const JsonObject = z
  .custom<Record<string, unknown>>(isJsonObject, { message: "must be a JSON object" })
  .openapi({ type: "object", additionalProperties: true });

export const SortBy = z.object({
  field: z.string().min(1),
  direction: z.enum(["asc", "desc"]),
});
export type SortBy = z.infer<typeof SortBy>;

export const Limit = z.number().int().min(0).nullish();
export const Offset = z.number().int().min(0).nullish();

export const EmptyResponse = z.object({}).openapi("EmptyResponse");
