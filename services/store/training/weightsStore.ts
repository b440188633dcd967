import type { ReachedProject } from "../../contract/operation.js";
import { createFileDigester } from "../../digests.js";
import type { ClickHouseStore } from "../clickhouse.js";
import { FilesRepository } from "../files/filesRepository.js";

/** Weights files are written by the service itself, never from a request: no size limit but memory. */
const NO_LIMIT = Number.MAX_SAFE_INTEGER;

async function* once(bytes: Uint8Array): AsyncGenerator<Uint8Array> {
  yield bytes;
}

/**
 * Model weights as files of the model's project (store/files): the same weights are stored
 * once per project (a file is named by its digest), so every model of a project on one base
 * model shares its step-0 file.
 */
export class WeightsStore {
  private readonly files: FilesRepository;

  constructor(store: ClickHouseStore) {
    this.files = new FilesRepository(store);
  }

  /**
   * Stores weights and answers their digest. `projectId` is the project of a model the
   * caller looked up and checked (an API key's reach, or a job of that model).
   */
  async put(projectId: string, weights: Uint8Array): Promise<string> {
    const digester = createFileDigester();
    digester.update(weights);
    const digest = digester.digest();
    if (await this.files.find(projectId, digest)) return digest;
    const staged = await this.files.stage(projectId as ReachedProject, once(weights), NO_LIMIT);
    await this.files.commit(staged);
    return staged.digest;
  }

  /** The weights under a digest, or null when the project has no such file. */
  async get(projectId: string, digest: string): Promise<Uint8Array | null> {
    const file = await this.files.find(projectId, digest);
    if (!file) return null;
    return new Uint8Array(await this.files.bytes(file));
  }
}
