import { ClientError, RetryableError, ValidationError, errorText } from "../../errors.js";
import { parseRef } from "../../refs.js";
import type { ClickHouseStore } from "../../store/clickhouse.js";
import { FilesRepository } from "../../store/files/filesRepository.js";
import { ObjectsRepository } from "../../store/objects/objectsRepository.js";
import { TablesRepository } from "../../store/tables/tablesRepository.js";

/** SFT data read from a URL or a file, at most this many bytes. */
export const SFT_DATA_MAX_BYTES = 64 * 1024 * 1024;
const FETCH_TIMEOUT_MS = 60_000;

/** `weave:///<entity>/<project>/file/<digest>`: a file uploaded with /file/create (JSONL). */
const FILE_REF = /^weave:\/\/\/([^/]+)\/([^/]+)\/file\/([^/]+)$/;
/**
 * `wandb-artifact:///<entity>/<project>/<name>[:<version>]`: in W&B, Weave objects are stored
 * as artifacts of that name whose versions are `v0`, `v1`, ... and `latest`; here it names the
 * object of our store (version: a digest, `latest`, `v<N>` or an alias; default `latest`).
 */
const ARTIFACT_REF = /^wandb-artifact:\/\/\/([^/:]+)\/([^/:]+)\/([^/:]+)(?::([^/:]+))?$/;

type DataSource =
  | { readonly kind: "http"; readonly url: string }
  | { readonly kind: "file"; readonly projectId: string; readonly digest: string }
  | { readonly kind: "table"; readonly projectId: string; readonly digest: string }
  | { readonly kind: "object"; readonly projectId: string; readonly name: string; readonly digest: string };

const unsupported = (url: string): never => {
  throw ValidationError.at(
    ["body", "training_data_url"],
    `unsupported training data URL ${url.slice(0, 200)}: give an http(s) URL of JSONL, weave:///<entity>/<project>/file/<digest>, ` +
      "a dataset weave:///<entity>/<project>/object/<name>:<digest> (or wandb-artifact:///<entity>/<project>/<name>:<version>) " +
      "or a table weave:///<entity>/<project>/table/<digest>",
  );
};

/** Where SFT data comes from; 422 for a URL of another kind (e.g. a W&B artifact). */
export function sftDataSource(url: string): DataSource {
  if (/^https?:\/\//i.test(url)) return { kind: "http", url };
  const file = FILE_REF.exec(url);
  if (file) return { kind: "file", projectId: `${file[1]}/${file[2]}`, digest: decodeURIComponent(file[3]!) };
  const artifact = ARTIFACT_REF.exec(url);
  if (artifact) return { kind: "object", projectId: `${artifact[1]}/${artifact[2]}`, name: artifact[3]!, digest: artifact[4] ?? "latest" };
  if (!url.startsWith("weave:///")) return unsupported(url);
  const ref = parseRef(url);
  const projectId = `${ref.entity}/${ref.project}`;
  if (ref.extra.length > 0) return unsupported(url);
  if (ref.kind === "table") return { kind: "table", projectId, digest: ref.digest };
  if (ref.kind === "object") return { kind: "object", projectId, name: ref.name, digest: ref.digest };
  return unsupported(url);
}

/** The project of our own store that SFT data names (the key must reach it), or null for an http(s) URL. */
export function sftDataProject(url: string): string | null {
  const source = sftDataSource(url);
  return source.kind === "http" ? null : source.projectId;
}

/** Splits JSONL into parsed lines; a line that is not JSON fails with its number. */
export function parseJsonl(text: string): unknown[] {
  const rows: unknown[] = [];
  text.split("\n").forEach((line, i) => {
    if (line.trim() === "") return;
    try {
      rows.push(JSON.parse(line));
    } catch {
      throw new Error(`training data line ${i + 1} is not JSON`);
    }
  });
  return rows;
}

/**
 * Reads SFT data as rows (each should be `{messages, tools?}`): JSONL from an http(s) URL or
 * a file of our store, or the rows of a table (directly, or a Dataset object's `rows`).
 */
export class TrainingDataReader {
  private readonly files: FilesRepository;
  private readonly objects: ObjectsRepository;
  private readonly tables: TablesRepository;

  constructor(store: ClickHouseStore) {
    this.files = new FilesRepository(store);
    this.objects = new ObjectsRepository(store);
    this.tables = new TablesRepository(store);
  }

  async rows(url: string, signal?: AbortSignal): Promise<unknown[]> {
    const source = sftDataSource(url);
    switch (source.kind) {
      case "http":
        return parseJsonl(await fetchText(source.url, signal));
      case "file":
        return parseJsonl(await this.fileText(source.projectId, source.digest));
      case "table":
        return this.tableRows(source.projectId, source.digest);
      case "object":
        return this.datasetRows(source.projectId, source.name, source.digest);
    }
  }

  private async fileText(projectId: string, digest: string): Promise<string> {
    const file = await this.files.find(projectId, digest);
    if (!file) throw new Error(`training data file ${digest} not found in project ${projectId}`);
    if (file.sizeBytes > SFT_DATA_MAX_BYTES) throw new Error(`training data file is larger than ${SFT_DATA_MAX_BYTES} bytes`);
    return (await this.files.bytes(file)).toString("utf8");
  }

  /** A Dataset's rows, or the JSONL file of an object that holds one (`files: {"train.jsonl": <digest>}`, as ART's SFT data artifact). */
  private async datasetRows(projectId: string, name: string, digest: string): Promise<unknown[]> {
    const version = await this.objects.read(projectId, name, digest);
    const val = JSON.parse(version.valText) as unknown;
    const rowsRef = typeof val === "object" && val !== null && "rows" in val ? (val as { rows: unknown }).rows : null;
    const jsonl = jsonlFileOf(val);
    if (typeof rowsRef !== "string" && jsonl !== null) return parseJsonl(await this.fileText(projectId, jsonl));
    if (typeof rowsRef !== "string") throw new Error(`object ${name}:${digest} is not a dataset (no rows table) and holds no .jsonl file`);
    const ref = parseRef(rowsRef);
    if (ref.kind !== "table") throw new Error(`the rows of ${name}:${digest} are not a table`);
    return this.tableRows(`${ref.entity}/${ref.project}`, ref.digest);
  }

  private async tableRows(projectId: string, digest: string): Promise<unknown[]> {
    const found = await this.tables.findTable(projectId, digest);
    if (!found) throw new Error(`training data table ${digest} not found in project ${projectId}`);
    const rows: unknown[] = [];
    for await (const row of this.tables.rows({ table: found.table })) rows.push(JSON.parse(row.val));
    return rows;
  }
}

/** The digest of the one `.jsonl` file among an object's `files` (name → digest), or null. */
function jsonlFileOf(val: unknown): string | null {
  const files = typeof val === "object" && val !== null && "files" in val ? (val as { files: unknown }).files : null;
  if (typeof files !== "object" || files === null) return null;
  const jsonl = Object.entries(files).filter(([file, digest]) => file.endsWith(".jsonl") && typeof digest === "string");
  return jsonl.length === 1 ? (jsonl[0]![1] as string) : null;
}

/** GET of JSONL; a 4xx fails the job, a 5xx or a network error is retried. */
async function fetchText(url: string, signal?: AbortSignal): Promise<string> {
  const timeout = AbortSignal.timeout(FETCH_TIMEOUT_MS);
  let res: Response;
  try {
    res = await fetch(url, { signal: signal ? AbortSignal.any([signal, timeout]) : timeout });
  } catch (err) {
    if (signal?.aborted) throw signal.reason;
    throw new RetryableError(`could not fetch the training data: ${errorText(err)}`);
  }
  if (res.status >= 500) throw new RetryableError(`training data URL answered ${res.status}`);
  if (!res.ok) throw new ClientError(res.status, `training data URL answered ${res.status}`);
  const declared = Number(res.headers.get("content-length") ?? 0);
  if (declared > SFT_DATA_MAX_BYTES) throw new Error(`training data is larger than ${SFT_DATA_MAX_BYTES} bytes`);
  const parts: Uint8Array[] = [];
  let size = 0;
  for await (const part of res.body ?? []) {
    size += part.length;
    if (size > SFT_DATA_MAX_BYTES) throw new Error(`training data is larger than ${SFT_DATA_MAX_BYTES} bytes`);
    parts.push(part);
  }
  return Buffer.concat(parts).toString("utf8");
}
