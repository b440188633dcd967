import { RowBinaryWriter } from "../rowBinary.js";

/** Content is stored in chunks of this many bytes (the last chunk of a file is shorter). */
export const CHUNK_BYTES = 1024 * 1024;

/** A `files` row as read (UInt64 columns arrive as strings in JSON). */
export interface FileReadRow {
  readonly upload_id: string;
  readonly size_bytes: string | number;
  readonly chunk_count: string | number;
}

export interface FileInsertRow {
  readonly project_id: string;
  readonly digest: string;
  readonly upload_id: string;
  readonly size_bytes: number;
  readonly chunk_count: number;
  readonly created_at: number;
  readonly version: number;
}

/** A file as recorded: which upload holds its chunks. */
export interface StoredFile {
  readonly projectId: string;
  readonly digest: string;
  readonly uploadId: string;
  readonly sizeBytes: number;
  readonly chunkCount: number;
}

export function toStoredFile(projectId: string, digest: string, row: FileReadRow): StoredFile {
  return { projectId, digest, uploadId: row.upload_id, sizeBytes: Number(row.size_bytes), chunkCount: Number(row.chunk_count) };
}

export const CHUNK_COLUMNS = ["project_id", "upload_id", "chunk_index", "deleted", "data"] as const;

/** RowBinary rows of `file_chunks` for consecutive chunks from `firstIndex`. */
export function chunkRows(projectId: string, uploadId: string, firstIndex: number, chunks: readonly Uint8Array[]): Buffer {
  const total = chunks.reduce((n, c) => n + c.length, 0);
  const out = new RowBinaryWriter(total + chunks.length * (projectId.length * 3 + uploadId.length + 32));
  chunks.forEach((chunk, i) => out.string(projectId).string(uploadId).int64(firstIndex + i).uint8(0).blob(chunk));
  return out.bytes();
}

/** Tombstones for chunks `0 .. count-1` of an upload: merged with them, they replace the content. */
export function chunkTombstoneRows(projectId: string, uploadId: string, count: number): Buffer {
  const out = new RowBinaryWriter(count * (projectId.length * 3 + uploadId.length + 32) + 16);
  for (let i = 0; i < count; i++) out.string(projectId).string(uploadId).int64(i).uint8(1).blob(EMPTY);
  return out.bytes();
}

const EMPTY = new Uint8Array(0);

/**
 * Cuts a stream of pieces of any size into chunks of exactly CHUNK_BYTES (the last one
 * shorter), copying each byte once.
 */
export class Chunker {
  private current: Buffer | null = null;
  private filled = 0;

  constructor(private readonly chunkBytes = CHUNK_BYTES) {}

  /** The chunks that `piece` completes. */
  push(piece: Uint8Array): Buffer[] {
    const full: Buffer[] = [];
    let at = 0;
    while (at < piece.length) {
      this.current ??= Buffer.allocUnsafe(this.chunkBytes);
      const n = Math.min(this.chunkBytes - this.filled, piece.length - at);
      this.current.set(piece.subarray(at, at + n), this.filled);
      this.filled += n;
      at += n;
      if (this.filled === this.chunkBytes) {
        full.push(this.current);
        this.current = null;
        this.filled = 0;
      }
    }
    return full;
  }

  /** The last, partial chunk, if any. */
  end(): Buffer | null {
    const last = this.current?.subarray(0, this.filled) ?? null;
    this.current = null;
    this.filled = 0;
    return last && last.length > 0 ? last : null;
  }
}
