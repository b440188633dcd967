import { NotFoundError, ValidationError } from "../../errors.js";
import { isJsonObject, type JsonObject, type JsonValue } from "../../json.js";
import { formatRef, parseRef } from "../../refs.js";
import type { ClickHouseStore } from "../../store/clickhouse.js";
import { ObjectsRepository } from "../../store/objects/objectsRepository.js";
import type { StoredTable } from "../../store/tables/tablesQuery.js";
import { TablesRepository } from "../../store/tables/tablesRepository.js";
import { objectRefOf } from "../../store/v2/v2Objects.js";

/**
 * The objects an evaluation job runs, read from the project's objects (facts from Weave's
 * classes; what is supported is said in docs/training.md, "Evaluation jobs"):
 * - `LLMStructuredCompletionModel` {llm_model_id, default_params: {messages_template: [{role,
 *   content}], temperature, top_p, max_tokens, stop, response_format: "json" | "text"}};
 * - `LLMAsAJudgeScorer` {model: an LLMStructuredCompletionModel (inline, or its ref) or a model
 *   name, scoring_prompt};
 * - `Evaluation` {dataset: a `Dataset` ref whose `rows` is a table ref, scorers: refs, trials}.
 * Templates take Python `str.format` fields: `{name}` is replaced by the row's field (`{output}`
 * by the model's output in a scoring prompt), `{{` and `}}` are braces; unknown fields stay.
 */
export interface ChatMessage {
  readonly role: string;
  readonly content: string;
}

export interface LlmModel {
  readonly ref: string | null;
  /** Its object name, the op name's prefix (`<name>.predict`). */
  readonly name: string;
  readonly llmModelId: string;
  readonly messagesTemplate: readonly ChatMessage[];
  readonly params: { readonly temperature?: number; readonly top_p?: number; readonly max_tokens?: number; readonly stop?: readonly string[] };
  readonly responseFormat: "json" | "text" | null;
}

export interface JudgeScorer {
  readonly ref: string;
  readonly name: string;
  readonly model: LlmModel;
  readonly scoringPrompt: string;
}

export interface EvaluationSpec {
  readonly ref: string;
  readonly name: string;
  readonly datasetRef: string;
  readonly table: StoredTable;
  readonly rowCount: number;
  readonly scorers: readonly JudgeScorer[];
  readonly trials: number;
}

export const MODEL_CLASS = "LLMStructuredCompletionModel";
export const SCORER_CLASS = "LLMAsAJudgeScorer";
const EVALUATION_CLASS = "Evaluation";
const DATASET_CLASS = "Dataset";

type Loc = (string | number)[];

const classOf = (val: JsonObject): string | null =>
  typeof val._class_name === "string" ? val._class_name : typeof val._type === "string" ? val._type : null;
const num = (v: JsonValue | undefined): number | undefined => (typeof v === "number" && Number.isFinite(v) ? v : undefined);

export class EvalObjects {
  private readonly objects: ObjectsRepository;
  private readonly tables: TablesRepository;

  constructor(store: ClickHouseStore) {
    this.objects = new ObjectsRepository(store);
    this.tables = new TablesRepository(store);
  }

  get tableRows(): TablesRepository {
    return this.tables;
  }

  async evaluation(projectId: string, ref: string, loc: Loc): Promise<EvaluationSpec> {
    const val = await this.objectOf(projectId, ref, loc, EVALUATION_CLASS);
    const datasetRef = typeof val.dataset === "string" ? val.dataset : null;
    if (datasetRef === null) throw ValidationError.at(loc, "the evaluation names no dataset ref");
    const dataset = await this.objectOf(projectId, datasetRef, loc, DATASET_CLASS, "its dataset");
    const table = await this.tableOf(projectId, dataset.rows, loc);
    const scorerRefs = Array.isArray(val.scorers) ? val.scorers : [];
    const scorers: JudgeScorer[] = [];
    for (const scorer of scorerRefs) {
      if (typeof scorer !== "string") throw ValidationError.at(loc, "the evaluation's scorers must be refs of LLMAsAJudgeScorer objects");
      scorers.push(await this.scorer(projectId, scorer, loc));
    }
    const trials = num(val.trials);
    return {
      ref,
      name: typeof val.name === "string" ? val.name : parseRef(ref).kind === "object" ? (parseRef(ref) as { name: string }).name : "Evaluation",
      datasetRef,
      table: table.table,
      rowCount: table.rowCount,
      scorers,
      trials: trials !== undefined && trials >= 1 ? Math.floor(trials) : 1,
    };
  }

  async model(projectId: string, ref: string, loc: Loc): Promise<LlmModel> {
    const val = await this.objectOf(projectId, ref, loc, MODEL_CLASS);
    return llmModelOf(val, ref, objectRefOf(projectId, ref, loc).name, loc);
  }

  async scorer(projectId: string, ref: string, loc: Loc): Promise<JudgeScorer> {
    const val = await this.objectOf(projectId, ref, loc, SCORER_CLASS);
    const name = typeof val.name === "string" && val.name !== "" ? val.name : objectRefOf(projectId, ref, loc).name;
    if (typeof val.scoring_prompt !== "string") throw ValidationError.at(loc, `scorer ${ref} has no scoring_prompt`);
    return { ref, name, model: await this.judgeModel(projectId, val.model, loc), scoringPrompt: val.scoring_prompt };
  }

  /** The rows of a dataset's table in order, with their digests. */
  async *rows(table: StoredTable): AsyncGenerator<{ digest: string; row: JsonObject }> {
    for await (const row of this.tables.rows({ table })) {
      const parsed: unknown = JSON.parse(row.val);
      yield { digest: row.digest, row: isJsonObject(parsed) ? (parsed as JsonObject) : { value: parsed as JsonValue } };
    }
  }

  private async judgeModel(projectId: string, model: JsonValue | undefined, loc: Loc): Promise<LlmModel> {
    if (typeof model === "string" && model.startsWith("weave:///")) return this.model(projectId, model, loc);
    if (typeof model === "string" && model !== "") return { ref: null, name: model, llmModelId: model, messagesTemplate: [], params: {}, responseFormat: null };
    if (isJsonObject(model)) return llmModelOf(model, null, typeof model.name === "string" ? model.name : MODEL_CLASS, loc);
    throw ValidationError.at(loc, "a scorer's model must be an LLMStructuredCompletionModel (inline or its ref) or a model name");
  }

  private async tableOf(projectId: string, rows: JsonValue | undefined, loc: Loc) {
    const parsed = typeof rows === "string" ? safeParse(rows) : null;
    if (!parsed || parsed.kind !== "table" || `${parsed.entity}/${parsed.project}` !== projectId) {
      throw ValidationError.at(loc, "the evaluation's dataset must hold its rows as a table ref of the project");
    }
    const found = await this.tables.findTable(projectId, parsed.digest);
    if (!found) throw new NotFoundError(`the dataset's rows table ${parsed.digest} is not in project ${projectId}`);
    return found;
  }

  /** The value of a live object of `className`: 422 for a ref that is not the project's or names another class, 404 for nothing. */
  private async objectOf(projectId: string, ref: string, loc: Loc, className: string, what = ref): Promise<JsonObject> {
    const parsed = objectRefOf(projectId, ref, loc);
    if (parsed.kind !== "object") throw ValidationError.at(loc, `${what} must be an object ref (${className}), not an op`);
    const [stored] = await this.objects.readByRefs(projectId, [{ objectId: parsed.name, digest: parsed.digest }]);
    if (!stored) throw new NotFoundError(`${ref} names no object of project ${projectId}`);
    const val: unknown = JSON.parse(stored.valText);
    const found = isJsonObject(val) ? classOf(val as JsonObject) : null;
    if (!isJsonObject(val) || found !== className) {
      throw ValidationError.at(loc, `${what} is ${found === null ? "not a Weave object" : `a ${found}`}, not a ${className}`);
    }
    return val as JsonObject;
  }
}

function safeParse(ref: string) {
  try {
    return parseRef(ref);
  } catch {
    return null;
  }
}

function llmModelOf(val: JsonObject, ref: string | null, name: string, loc: Loc): LlmModel {
  const id = val.llm_model_id;
  if (typeof id !== "string" || id === "") throw ValidationError.at(loc, `${ref ?? "the scorer's model"} has no llm_model_id`);
  const params = isJsonObject(val.default_params) ? val.default_params : {};
  const template = Array.isArray(params.messages_template) ? params.messages_template : [];
  const messages = template.flatMap((m): ChatMessage[] =>
    isJsonObject(m) && typeof m.role === "string" && typeof m.content === "string" ? [{ role: m.role, content: m.content }] : [],
  );
  const stop = Array.isArray(params.stop) ? params.stop.filter((s): s is string => typeof s === "string") : undefined;
  const picked = { temperature: num(params.temperature), top_p: num(params.top_p), max_tokens: num(params.max_tokens), stop };
  const format = params.response_format;
  return {
    ref,
    name: typeof val.name === "string" && val.name !== "" ? val.name : name,
    llmModelId: id,
    messagesTemplate: messages,
    params: Object.fromEntries(Object.entries(picked).filter(([, v]) => v !== undefined)),
    responseFormat: format === "json" || format === "text" ? format : null,
  };
}

/** Python `str.format` with named fields only: `{name}` → the value (text as is, anything else as JSON); unknown fields stay. */
export function formatTemplate(template: string, vars: Readonly<Record<string, JsonValue | undefined>>): string {
  return template.replace(/\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (whole, name: string | undefined) => {
    if (whole === "{{") return "{";
    if (whole === "}}") return "}";
    const value = vars[name!];
    if (value === undefined) return whole;
    return typeof value === "string" ? value : JSON.stringify(value);
  });
}

/** A dataset row ref: the dataset object's ref with the path `attr/rows/id/<row digest>` (as the Python SDK names a row). */
export function rowRef(datasetRef: string, rowDigest: string): string {
  const parsed = parseRef(datasetRef);
  return formatRef({ ...parsed, extra: [...parsed.extra, { edge: "attr", value: "rows" }, { edge: "id", value: rowDigest }] });
}
