import { expect } from "vitest";
import type { CallSchema } from "../../services/contract/calls.js";
import { parseRef } from "../../services/refs.js";
import type { Client } from "../support/service.js";
import type { Obj } from "../objects/support.js";

/** A call as /calls/stream_query answers it. */
export type StoredCall = CallSchema;

/** How the SDK stores a file-backed value (an op's source, an image): one file, named, by digest. */
export interface FileBacked {
  _type: "CustomWeaveType";
  weave_type: { type: string };
  files: Record<string, string>;
  load_op: string;
}

/** Reads through the HTTP API what one SDK project logged. */
export function sdkProject(api: Client, project: string) {
  const calls = () => api.lines<StoredCall>("/calls/stream_query", { project_id: project, sort_by: [{ field: "started_at", direction: "asc" }] });
  const readObject = async (objectId: string, digest: string): Promise<Obj> =>
    (await api.json<{ obj: Obj }>("/obj/read", { project_id: project, object_id: objectId, digest })).obj;
  /** Resolves an object or op ref the SDK wrote: it names this project, and /obj/read answers it. */
  const readRef = async (ref: string): Promise<Obj> => {
    const parsed = parseRef(ref);
    if (parsed.kind !== "object" && parsed.kind !== "op") throw new Error(`not an object or op ref: ${ref}`);
    expect(`${parsed.entity}/${parsed.project}`).toBe(project);
    const obj = await readObject(parsed.name, parsed.digest);
    expect(obj.kind).toBe(parsed.kind);
    expect(obj.digest).toBe(parsed.digest);
    return obj;
  };
  const fileBytes = async (digest: string): Promise<Buffer> => {
    const res = await api.post("/file/content", { project_id: project, digest });
    if (res.status !== 200) throw new Error(`/file/content answered ${res.status}: ${await res.text()}`);
    return Buffer.from(await res.arrayBuffer());
  };
  const tableRows = async (digest: string) =>
    (await api.json<{ rows: { digest: string; val: unknown; original_index?: number }[] }>("/table/query", { project_id: project, digest })).rows;
  return { calls, readObject, readRef, fileBytes, tableRows };
}

/** The source text of an op as the SDK saved it: an `Op` file-backed object whose `obj.py` is the function. */
export async function opSource(p: ReturnType<typeof sdkProject>, opRef: string): Promise<string> {
  const op = await p.readRef(opRef);
  const val = op.val as FileBacked;
  expect(val).toEqual({ _type: "CustomWeaveType", weave_type: { type: "Op" }, files: { "obj.py": expect.any(String) }, load_op: "NO_LOAD_OP" });
  return (await p.fileBytes(val.files["obj.py"]!)).toString("utf8");
}

export function byOpName(calls: StoredCall[], name: string): StoredCall[] {
  return calls.filter((c) => parseRef(c.op_name).kind === "op" && (parseRef(c.op_name) as { name: string }).name === name);
}

export const SDK_ATTRIBUTES = { weave: { client_version: expect.any(String), source: "js-sdk" } };
