import type { ReachedProject } from "../../contract/operation.js";
import type {
  DatasetCreateBody, EvaluationCreateBody, ModelCreateBody, OpCreateBody, ScorerCreateBody, V2ObjectFamily,
} from "../../contract/v2Objects.js";
import { NotFoundError, ValidationError } from "../../errors.js";
import { isJsonObject, type JsonObject, type JsonValue } from "../../json.js";
import type { PlainJson } from "../../losslessJson.js";
import { formatRef, parseRef, type WeaveRef } from "../../refs.js";
import { RefParseError } from "../../errors.js";
import type { ClickHouseStore } from "../clickhouse.js";
import { FilesRepository } from "../files/filesRepository.js";
import type { ObjectMeta } from "../objects/objectRows.js";
import { ObjectsRepository } from "../objects/objectsRepository.js";
import type { VersionSelection } from "../objects/objectsQuery.js";
import { TablesRepository, type RowText } from "../tables/tablesRepository.js";

/**
 * The object-backed `/v2/` families, stored as ordinary objects (so `/obj/read` and
 * `/objs/query` see them, and their refs resolve):
 * - an op's source is the file `obj.py`; its value `{_type: "CustomWeaveType", weave_type:
 *   {type: "Op"}, files: {"obj.py": <file digest>}}` (kind `op`);
 * - a dataset's rows become a table; its value a `Dataset` object naming the table by ref;
 * - a scorer is an op `<scorer id>.score` (its source) and a `Scorer` object naming it;
 * - an evaluation is an `Evaluation` object naming its dataset and scorers by ref;
 * - a model is a `Model` object holding its source and attributes.
 * Objects of the SDKs (an SDK's Dataset or Evaluation) are listed and read too; fields their
 * value lacks read as null.
 */

/** Source files are small; one larger than this is refused by the contract already. */
const MAX_SOURCE_BYTES = 2 * 1024 * 1024;
const OBJECT_BASES = ["Object", "BaseModel"];

export interface CreatedVersion {
  readonly digest: string;
  readonly object_id: string;
  readonly version_index: number;
}

/** A read version: its metadata fields and its family's own fields. */
export type FamilyVersion = Record<string, unknown> & { object_id: string; digest: string; version_index: number; created_at: string };

/** Object id from a name, as Weave makes it: lowercased, spaces and `/` → `_`. */
export function objectIdOf(name: string, loc: (string | number)[]): string {
  const id = name.toLowerCase().replace(/[\s/]/g, "_");
  if (!/^[\p{L}\p{N}\p{M}\p{Pc}.-]{1,128}$/u.test(id)) {
    throw ValidationError.at(loc, `the name gives the object id ${JSON.stringify(id)}, which may hold only letters, digits, '_', '.' and '-'`);
  }
  return id;
}

/** Which stored objects belong to a family. */
const SELECTIONS: Record<V2ObjectFamily, Pick<VersionSelection, "isOp" | "baseClasses">> = {
  ops: { isOp: true },
  datasets: { baseClasses: ["Dataset"] },
  scorers: { baseClasses: ["Scorer"] },
  evaluations: { baseClasses: ["Evaluation"] },
  models: { baseClasses: ["Model"] },
};

const str = (v: JsonValue | undefined): string | null => (typeof v === "string" ? v : null);

export class V2ObjectsRepository {
  readonly objects: ObjectsRepository;
  private readonly tables: TablesRepository;
  private readonly files: FilesRepository;

  constructor(store: ClickHouseStore) {
    this.objects = new ObjectsRepository(store);
    this.tables = new TablesRepository(store);
    this.files = new FilesRepository(store);
  }

  async createOp(projectId: ReachedProject, body: OpCreateBody, user: string): Promise<CreatedVersion> {
    const objectId = objectIdOf(body.name ?? "op", ["body", "name"]);
    return this.createVersion(projectId, objectId, await this.opValue(projectId, body.source_code ?? ""), user);
  }

  /** `rows`: each row's JSON text as sent (digested losslessly); the parsed rows' text when absent. */
  async createDataset(projectId: ReachedProject, body: DatasetCreateBody, user: string, rowTexts?: readonly RowText[]): Promise<CreatedVersion> {
    const name = body.name ?? "Dataset";
    const objectId = objectIdOf(name, ["body", "name"]);
    const rows = rowTexts ?? body.rows.map((row, i) => ({ text: JSON.stringify(row), loc: ["body", "rows", i] }));
    const { digest } = await this.tables.createFromRows(projectId, rows);
    const [entity, project] = projectId.split("/") as [string, string];
    const rowsRef = formatRef({ kind: "table", entity, project, digest, extra: [] });
    return this.createVersion(projectId, objectId, weaveObject("Dataset", { name, description: body.description ?? null, rows: rowsRef }), user);
  }

  async createScorer(projectId: ReachedProject, body: ScorerCreateBody, user: string): Promise<CreatedVersion & { scorer: string }> {
    const objectId = objectIdOf(body.name, ["body", "name"]);
    const opId = `${objectId}.score`;
    const op = await this.createVersion(projectId, opId, await this.opValue(projectId, body.op_source_code), user);
    const score = refOf(projectId, "op", opId, op.digest);
    const created = await this.createVersion(projectId, objectId, weaveObject("Scorer", { name: body.name, description: body.description ?? null, score }), user);
    return { ...created, scorer: refOf(projectId, "object", objectId, created.digest) };
  }

  async createEvaluation(projectId: ReachedProject, body: EvaluationCreateBody, user: string): Promise<CreatedVersion & { evaluation_ref: string }> {
    const objectId = objectIdOf(body.name, ["body", "name"]);
    await this.requireObjects(projectId, [[body.dataset, ["body", "dataset"]], ...(body.scorers ?? []).map((s, i): RefAt => [s, ["body", "scorers", i]])]);
    const val = weaveObject("Evaluation", {
      name: body.name,
      description: body.description ?? null,
      dataset: body.dataset,
      scorers: body.scorers ?? [],
      trials: body.trials,
      evaluation_name: body.evaluation_name ?? null,
      metadata: (body.eval_attributes ?? null) as PlainJson,
    });
    const created = await this.createVersion(projectId, objectId, val, user);
    return { ...created, evaluation_ref: refOf(projectId, "object", objectId, created.digest) };
  }

  async createModel(projectId: ReachedProject, body: ModelCreateBody, user: string): Promise<CreatedVersion & { model_ref: string }> {
    const objectId = objectIdOf(body.name, ["body", "name"]);
    const val = weaveObject("Model", {
      name: body.name,
      description: body.description ?? null,
      source_code: body.source_code,
      attributes: (body.attributes ?? null) as PlainJson,
    });
    const created = await this.createVersion(projectId, objectId, val, user);
    return { ...created, model_ref: refOf(projectId, "object", objectId, created.digest) };
  }

  /** One version of a family's object; NotFoundError when it is missing, deleted or of another family. */
  async read(family: V2ObjectFamily, projectId: string, objectId: string, digest: string): Promise<FamilyVersion> {
    const version = await this.objects.read(projectId, objectId, digest);
    if (!belongsTo(family, version.meta)) throw new NotFoundError(`${objectId}:${digest} is not one of the project's ${family}`);
    return this.toFamily(family, projectId, version.meta, JSON.parse(version.valText) as JsonValue);
  }

  /** Live versions of the family, oldest first, paged. */
  async list(family: V2ObjectFamily, projectId: string, limit: number | undefined, offset: number | undefined): Promise<FamilyVersion[]> {
    const versions = await this.objects.query({ projectId, ...SELECTIONS[family], sortBy: [{ field: "created_at", direction: "asc" }], limit, offset });
    const out: FamilyVersion[] = [];
    for (const v of versions) out.push(await this.toFamily(family, projectId, v.meta, JSON.parse(v.valText) as JsonValue));
    return out;
  }

  /** Deletes versions (all live ones without digests) of an object of the family. */
  async delete(family: V2ObjectFamily, projectId: string, objectId: string, digests: readonly string[] | undefined): Promise<number> {
    const found = await this.objects.query({ projectId, objectIds: [objectId], ...SELECTIONS[family], limit: 1 }, { metadataOnly: true });
    if (found.length === 0) throw new NotFoundError(`the project ${projectId} has no ${family} object ${JSON.stringify(objectId)}`);
    return this.objects.delete(projectId, objectId, digests && digests.length > 0 ? digests : null);
  }

  /**
   * Every ref must name a live object or op version of this project; 422 for a ref that is not
   * one of its refs, 404 for one that names nothing.
   */
  async requireObjects(projectId: string, refs: readonly RefAt[]): Promise<void> {
    const parsed = refs.map(([ref, loc]) => [objectRefOf(projectId, ref, loc), ref] as const);
    const found = await this.objects.readByRefs(projectId, parsed.map(([r]) => ({ objectId: r.name, digest: r.digest })));
    const missing = found.findIndex((v) => v === null);
    if (missing >= 0) throw new NotFoundError(`${parsed[missing]![1]} names no object of project ${projectId}`);
  }

  private async createVersion(projectId: string, objectId: string, val: PlainJson, user: string): Promise<CreatedVersion> {
    const digest = await this.objects.createValue(projectId, objectId, val, user);
    const meta = await this.objects.resolve(projectId, objectId, digest);
    return { digest, object_id: objectId, version_index: meta.version_index };
  }

  private async opValue(projectId: ReachedProject, source: string): Promise<PlainJson> {
    const file = await this.files.stage(projectId, oneChunk(Buffer.from(source, "utf8")), MAX_SOURCE_BYTES);
    await this.files.commit(file);
    return { _type: "CustomWeaveType", weave_type: { type: "Op" }, files: { "obj.py": file.digest } };
  }

  private async opSource(projectId: string, val: JsonValue): Promise<string> {
    const files = isJsonObject(val) && isJsonObject(val.files) ? val.files : {};
    const digest = str(files["obj.py"]);
    const file = digest === null ? null : await this.files.find(projectId, digest);
    if (file === null) return "";
    const parts: Buffer[] = [];
    for await (const chunk of this.files.content(file)) parts.push(chunk);
    return Buffer.concat(parts).toString("utf8");
  }

  private async toFamily(family: V2ObjectFamily, projectId: string, meta: ObjectMeta, val: JsonValue): Promise<FamilyVersion> {
    const base = { object_id: meta.object_id, digest: meta.digest, version_index: meta.version_index, created_at: meta.created_at };
    const v: JsonObject = isJsonObject(val) ? val : {};
    const name = str(v.name) ?? meta.object_id;
    const description = str(v.description);
    switch (family) {
      case "ops":
        return { ...base, code: await this.opSource(projectId, val) };
      case "datasets":
        return { ...base, name, description, rows: str(v.rows) ?? "" };
      case "scorers":
        return { ...base, name, description, score_op: str(v.score) ?? "" };
      case "evaluations":
        return {
          ...base, name, description,
          dataset: str(v.dataset) ?? "",
          scorers: Array.isArray(v.scorers) ? v.scorers.filter((s): s is string => typeof s === "string") : [],
          trials: typeof v.trials === "number" ? v.trials : 1,
          evaluation_name: str(v.evaluation_name),
          evaluate_op: str(v.evaluate), predict_and_score_op: str(v.predict_and_score), summarize_op: str(v.summarize),
        };
      case "models":
        return { ...base, name, description, source_code: str(v.source_code) ?? "", attributes: isJsonObject(v.attributes) ? v.attributes : null };
    }
  }
}

export type RefAt = readonly [ref: string, loc: (string | number)[]];

function belongsTo(family: V2ObjectFamily, meta: ObjectMeta): boolean {
  const selection = SELECTIONS[family];
  if (selection.isOp) return meta.kind === "op";
  return meta.kind === "object" && (selection.baseClasses ?? []).includes(meta.base_object_class ?? "");
}

/** An object or op ref of `projectId`; 422 at `loc` otherwise. */
export function objectRefOf(projectId: string, ref: string, loc: (string | number)[]): Extract<WeaveRef, { kind: "object" | "op" }> {
  let parsed: WeaveRef;
  try {
    parsed = parseRef(ref);
  } catch (e) {
    if (e instanceof RefParseError) throw ValidationError.at(loc, e.message);
    throw e;
  }
  if (parsed.kind !== "object" && parsed.kind !== "op") throw ValidationError.at(loc, "must be an object or op ref (weave:///<entity>/<project>/object/<name>:<digest>)");
  if (`${parsed.entity}/${parsed.project}` !== projectId) throw ValidationError.at(loc, `the ref belongs to project ${parsed.entity}/${parsed.project}, not ${projectId}`);
  if (parsed.extra.length > 0) throw ValidationError.at(loc, "must name an object version, not a path inside one");
  return parsed;
}

export function refOf(projectId: string, kind: "object" | "op", name: string, digest: string): string {
  const [entity, project] = projectId.split("/") as [string, string];
  return formatRef({ kind, entity, project, name, digest, extra: [] });
}

/** A Weave object value of `className` (its own base class): `_type`, the fields, `_class_name`, `_bases`. */
function weaveObject(className: string, fields: Record<string, PlainJson>): PlainJson {
  return { _type: className, ...fields, _class_name: className, _bases: OBJECT_BASES };
}

async function* oneChunk(bytes: Buffer): AsyncGenerator<Uint8Array> {
  yield bytes;
}
