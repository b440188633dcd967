import type { FeedbackPayloadPath, FeedbackPayloadSchemaReq, ValueType } from "../../contract/feedback.js";
import type { ClickHouseStore } from "../clickhouse.js";
import { ParamBuilder, type BuiltQuery } from "../sql.js";
import { payloadPathSegments } from "./fields.js";
import { NOTE_TYPE, REACTION_TYPE } from "./payload.js";
import { triggerCondition } from "./stats.js";
import { isoToMicros } from "../../times.js";

/**
 * `/feedback/payload_schema`: which payload leaves exist and what kind of value each holds,
 * so that a client can build `/feedback/stats` metrics (and filters) without knowing the
 * feedback types in advance. Answer (Weave's shape): `{paths: [{json_path, value_type}]}`,
 * sorted by json_path.
 *
 * - Sample: the latest SAMPLES_PER_SOURCE live payloads of each (feedback_type,
 *   trigger_ref) pair, at most `sample_limit` payloads in all, newest first; filtered by
 *   `feedback_type`, `trigger_ref` (exact or `…:*`) and created_at in [start, end) when given.
 * - Paths: every leaf reached through objects (arrays are not entered; a path whose keys
 *   break the field-path rules is left out, since it could not be queried).
 * - value_type: numeric for JSON numbers, boolean for booleans, categorical for strings;
 *   a path seen with several kinds is categorical; null leaves say nothing.
 * - When `feedback_type` is a builtin type, its builtin paths are listed even before any
 *   feedback exists (`wandb.reaction.1`: emoji, detoned; `wandb.note.1`: note).
 */

export const SAMPLES_PER_SOURCE = 20;

const BUILTIN_PATHS: Readonly<Record<string, readonly FeedbackPayloadPath[]>> = {
  [REACTION_TYPE]: [
    { json_path: "emoji", value_type: "categorical" },
    { json_path: "detoned", value_type: "categorical" },
  ],
  [NOTE_TYPE]: [{ json_path: "note", value_type: "categorical" }],
};

export function payloadSampleQuery(req: FeedbackPayloadSchemaReq): BuiltQuery {
  const pb = new ParamBuilder();
  const conditions = [`project_id = ${pb.str(req.project_id)}`, "deleted = 0"];
  if (req.start) conditions.push(`created_at >= ${pb.int(isoToMicros(req.start)!)}`);
  if (req.end) conditions.push(`created_at < ${pb.int(isoToMicros(req.end)!)}`);
  if (req.feedback_type) conditions.push(`feedback_type = ${pb.str(req.feedback_type)}`);
  conditions.push(...triggerCondition(req.trigger_ref, pb));
  return {
    sql: `SELECT payload
FROM feedback FINAL
WHERE ${conditions.join("\n  AND ")}
ORDER BY created_at DESC, id DESC
LIMIT ${pb.count(SAMPLES_PER_SOURCE)} BY feedback_type, trigger_ref
LIMIT ${pb.count(req.sample_limit)}`,
    params: pb.params,
  };
}

function kindOf(value: unknown): ValueType | null {
  if (typeof value === "number") return "numeric";
  if (typeof value === "boolean") return "boolean";
  if (typeof value === "string") return "categorical";
  return null;
}

/** Leaf paths of the payloads with their value types (see the module comment). */
export function discoverPaths(payloads: readonly unknown[], builtin: readonly FeedbackPayloadPath[] = []): FeedbackPayloadPath[] {
  const seen = new Map<string, ValueType>(builtin.map((p) => [p.json_path, p.value_type]));
  const note = (path: string, kind: ValueType) => {
    const before = seen.get(path);
    seen.set(path, before === undefined || before === kind ? kind : "categorical");
  };
  const walk = (value: unknown, path: string) => {
    if (value !== null && typeof value === "object" && !Array.isArray(value)) {
      for (const [key, child] of Object.entries(value)) walk(child, path ? `${path}.${key}` : key);
      return;
    }
    const kind = kindOf(value);
    if (kind === null || path === "") return;
    try {
      payloadPathSegments(path);
    } catch {
      return;
    }
    note(path, kind);
  };
  for (const payload of payloads) walk(payload, "");
  return [...seen.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([json_path, value_type]) => ({ json_path, value_type }));
}

export async function payloadSchema(store: ClickHouseStore, req: FeedbackPayloadSchemaReq): Promise<{ paths: FeedbackPayloadPath[] }> {
  const rows = await store.rows<{ payload: string }>("feedback_payload_schema", payloadSampleQuery(req));
  const builtin = req.feedback_type ? (BUILTIN_PATHS[req.feedback_type] ?? []) : [];
  return { paths: discoverPaths(rows.map((r) => JSON.parse(r.payload) as unknown), builtin) };
}
