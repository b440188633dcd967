import { expect } from "vitest";
import { objectDigest, pythonJsonDumps } from "../../services/digests.js";
import { parseLossless, type LosslessValue } from "../../services/losslessJson.js";
import type { Client } from "../support/service.js";

/** An object version as the API answers it. */
export interface Obj {
  project_id: string;
  object_id: string;
  created_at: string;
  deleted_at: string | null;
  digest: string;
  version_index: number;
  is_latest: number;
  kind: string;
  base_object_class: string | null;
  leaf_object_class: string | null;
  val: unknown;
  wb_user_id: string | null;
  size_bytes: number | null;
  tags: string[] | null;
  aliases: string[] | null;
}

export const ISO_MICROS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/;

/** The helpers of one project. */
export function objectsApi(api: Client, project: string) {
  const create = async (objectId: string, val: unknown, extra: Record<string, unknown> = {}): Promise<string> => {
    const res = await api.json<{ digest: string; object_id: string }>("/obj/create", { obj: { project_id: project, object_id: objectId, val, ...extra } });
    expect(res.object_id).toBe(objectId);
    return res.digest;
  };
  /** Creates from the value's JSON text exactly as written (`1.0` stays a float). */
  const createText = async (objectId: string, valText: string): Promise<Response> =>
    api.post("/obj/create", `{"obj": {"project_id": ${JSON.stringify(project)}, "object_id": ${JSON.stringify(objectId)}, "val": ${valText}}}`);
  const read = async (objectId: string, digest: string, extra: Record<string, unknown> = {}): Promise<Obj> =>
    (await api.json<{ obj: Obj }>("/obj/read", { project_id: project, object_id: objectId, digest, ...extra })).obj;
  const readStatus = async (objectId: string, digest: string): Promise<{ status: number; detail: unknown }> => {
    const res = await api.post("/obj/read", { project_id: project, object_id: objectId, digest });
    return { status: res.status, detail: ((await res.json()) as { detail?: unknown }).detail };
  };
  const query = async (body: Record<string, unknown> = {}): Promise<Obj[]> => (await api.json<{ objs: Obj[] }>("/objs/query", { project_id: project, ...body })).objs;
  const remove = async (objectId: string, digests?: string[]) =>
    api.post("/obj/delete", { project_id: project, object_id: objectId, ...(digests ? { digests } : {}) });
  return { create, createText, read, readStatus, query, remove };
}

/** PUT with a JSON body. */
export async function putJson(baseUrl: string, authorization: string, path: string, body: unknown): Promise<{ status: number; body: unknown }> {
  const res = await fetch(`${baseUrl}${path}`, { method: "PUT", headers: { authorization, "content-type": "application/json" }, body: JSON.stringify(body) });
  return { status: res.status, body: await res.json() };
}

/** The `val` of `/obj/read`'s answer text, read losslessly, and what a Python client digests from it. */
export function valOfAnswer(text: string): { val: LosslessValue; canonical: string; digest: string } {
  const answer = parseLossless(text);
  const obj = answer instanceof Map ? answer.get("obj") : undefined;
  const val = obj instanceof Map ? (obj.get("val") ?? null) : null;
  return { val, canonical: pythonJsonDumps(val), digest: objectDigest(val) };
}
