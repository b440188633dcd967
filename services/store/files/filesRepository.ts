import { randomInt } from "node:crypto";
import type { ReachedProject } from "../../contract/operation.js";
import { createFileDigester } from "../../digests.js";
import { ClientError } from "../../errors.js";
import { uuid4 } from "../../ids.js";
import { MonotonicClock, type Clock } from "../../times.js";
import type { ClickHouseStore } from "../clickhouse.js";
import { CHUNK_BYTES, CHUNK_COLUMNS, Chunker, chunkRows, chunkTombstoneRows, toStoredFile, type FileInsertRow, type FileReadRow, type StoredFile } from "./fileRows.js";
import { chunkRangeQuery, fileUploadsQuery, totalSizeQuery } from "./filesQuery.js";
import { CHUNKS_TABLE, FILES_TABLE } from "./schema.js";

/** Chunks written per INSERT (one part each): an upload holds at most this many in memory. */
const CHUNKS_PER_INSERT = 8;
/** Chunks read per query: the chunk table's index granularity, so a query reads one granule. */
const CHUNKS_PER_READ = 8;
/** Upper bound of the random `version` that ranks duplicate uploads (below 2^48). */
const VERSION_RANGE = 2 ** 48 - 1;

/** An upload whose chunks are stored but not yet recorded under its digest: not served. */
export type StagedUpload = StoredFile;

/**
 * Files and their content (schema.ts says how uploads become files). Writes go straight to
 * ClickHouse: an answered upload is readable by the next request.
 *
 * This class is the seam for object storage: `stage` and `content` are the only places that
 * move bytes; a deployment keeping large files in S3 or GCS would put them there under the
 * upload id and keep `files` as it is.
 */
export class FilesRepository {
  constructor(
    private readonly store: ClickHouseStore,
    private readonly clock: Clock = new MonotonicClock(),
  ) {}

  /**
   * Stores content as it streams in, in chunks under a new upload id, digesting it on the
   * way; at most CHUNKS_PER_INSERT chunks are held at once. More than `maxBytes` → 413. On
   * any failure (the limit, the source's own error, ClickHouse) the chunks written so far
   * are tombstoned before the error is passed on.
   */
  async stage(projectId: ReachedProject, content: AsyncIterable<Uint8Array>, maxBytes: number): Promise<StagedUpload> {
    const uploadId = uuid4();
    const digester = createFileDigester();
    const chunker = new Chunker();
    let pending: Buffer[] = [];
    let started = 0;
    let size = 0;
    const flush = async () => {
      const batch = pending;
      pending = [];
      const first = started;
      started += batch.length;
      await this.store.insertRowBinary("file_chunks_write", CHUNKS_TABLE, CHUNK_COLUMNS, chunkRows(projectId, uploadId, first, batch));
    };
    try {
      for await (const piece of content) {
        size += piece.length;
        if (size > maxBytes) throw new ClientError(413, `the file is larger than the limit of ${maxBytes} bytes`);
        digester.update(piece);
        pending.push(...chunker.push(piece));
        if (pending.length >= CHUNKS_PER_INSERT) await flush();
      }
      const last = chunker.end();
      if (last) pending.push(last);
      if (pending.length > 0) await flush();
    } catch (err) {
      await this.dropChunks(projectId, uploadId, started);
      throw err;
    }
    return { projectId, digest: digester.digest(), uploadId, sizeBytes: size, chunkCount: started };
  }

  /** Drops a staged upload that will not be recorded (e.g. its digest was not the one expected). */
  async discard(upload: StagedUpload): Promise<void> {
    await this.dropChunks(upload.projectId, upload.uploadId, upload.chunkCount);
  }

  /**
   * Records a staged upload under its digest. When the project has that content already,
   * the upload's chunks are dropped instead. When two identical uploads were recorded at
   * once, the one ranked first is served and each commit drops the chunks of the others it
   * sees (its own included when it lost).
   */
  async commit(upload: StagedUpload): Promise<void> {
    if (await this.find(upload.projectId, upload.digest)) return this.discard(upload);
    await this.store.insert<FileInsertRow>("file_record", FILES_TABLE, [
      {
        project_id: upload.projectId,
        digest: upload.digest,
        upload_id: upload.uploadId,
        size_bytes: upload.sizeBytes,
        chunk_count: upload.chunkCount,
        created_at: this.clock.nowMicros(),
        version: randomInt(VERSION_RANGE),
      },
    ]);
    const [served, ...others] = await this.uploads(upload.projectId, upload.digest);
    const losers = served?.uploadId === upload.uploadId || others.some((o) => o.uploadId === upload.uploadId) ? others : [...others, upload];
    for (const loser of losers) await this.dropChunks(loser.projectId, loser.uploadId, loser.chunkCount);
  }

  /** The file served for a digest, or null when the project has no such file. */
  async find(projectId: string, digest: string): Promise<StoredFile | null> {
    const [served] = await this.uploads(projectId, digest);
    return served ?? null;
  }

  /** A recorded file's content, chunk after chunk in order; at most one chunk in memory. */
  async *content(file: StoredFile): AsyncGenerator<Buffer> {
    for (let from = 0; from < file.chunkCount; from += CHUNKS_PER_READ) {
      const to = Math.min(from + CHUNKS_PER_READ, file.chunkCount);
      let next = from;
      for await (const chunk of this.store.blobs("file_content_read", chunkRangeQuery(file, from, to), CHUNK_BYTES)) {
        next++;
        yield chunk;
      }
      if (next !== to) throw new Error(`file ${file.digest} of ${file.projectId}: read chunks ${from}..${next - 1} of ${from}..${to - 1}`);
    }
  }

  /** A recorded file's whole content in memory (for files known to be small enough). */
  async bytes(file: StoredFile): Promise<Buffer> {
    const parts: Buffer[] = [];
    for await (const chunk of this.content(file)) parts.push(chunk);
    return Buffer.concat(parts);
  }

  /** Bytes of the project's distinct files. */
  async totalSize(projectId: string): Promise<number> {
    const [row] = await this.store.rows<{ total_size_bytes: string | number }>("files_total_size", totalSizeQuery(projectId));
    return Number(row?.total_size_bytes ?? 0);
  }

  private async uploads(projectId: string, digest: string): Promise<StoredFile[]> {
    const rows = await this.store.rows<FileReadRow>("file_uploads", fileUploadsQuery(projectId, digest));
    return rows.map((row) => toStoredFile(projectId, digest, row));
  }

  /**
   * Tombstones chunks `0 .. count-1` of an upload. Best effort: an upload whose tombstones
   * could not be written is never recorded, so its chunks are never served; they only take
   * space until removed by hand.
   */
  private async dropChunks(projectId: string, uploadId: string, count: number): Promise<void> {
    if (count === 0) return;
    await this.store
      .insertRowBinary("file_chunks_drop", CHUNKS_TABLE, CHUNK_COLUMNS, chunkTombstoneRows(projectId, uploadId, count))
      .catch(() => undefined);
  }
}
