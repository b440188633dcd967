import { appendFile, open, readdir, readFile, rename, type FileHandle } from "node:fs/promises";
import { join } from "node:path";
import { crc32 } from "./crc32.js";

/** Makes the directory's entries (created, renamed files) durable. */
export async function syncDirectory(dir: string): Promise<void> {
  const handle = await open(dir, "r");
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * A file's read handle, opened once however many reads ask for it at the same time (each
 * waiting for its own open would leave all but one handle to the garbage collector), and
 * opened again after `close`. A failed open is tried again by the next read.
 */
export class SharedReader {
  private opening: Promise<FileHandle> | null = null;

  constructor(readonly path: string) {}

  handle(): Promise<FileHandle> {
    if (!this.opening) {
      const opening = open(this.path, "r");
      this.opening = opening;
      opening.catch(() => {
        if (this.opening === opening) this.opening = null;
      });
    }
    return this.opening;
  }

  /** Closes the handle, once an open under way ends. */
  async close(): Promise<void> {
    const opening = this.opening;
    this.opening = null;
    const handle = await opening?.catch(() => null);
    await handle?.close();
  }
}

/** Writes all of `data` at `position`, however many writes it takes. */
export async function writeFully(handle: FileHandle, data: Buffer, position: number): Promise<void> {
  let done = 0;
  while (done < data.length) {
    const { bytesWritten } = await handle.write(data, done, data.length - done, position + done);
    done += bytesWritten;
  }
}

/** Reads `length` bytes at `position`, fewer only where the file ends. */
export async function readFully(handle: FileHandle, position: number, length: number): Promise<Buffer> {
  const buffer = Buffer.allocUnsafe(length);
  let done = 0;
  while (done < length) {
    const { bytesRead } = await handle.read(buffer, done, length - done, position + done);
    if (bytesRead === 0) break;
    done += bytesRead;
  }
  return buffer.subarray(0, done);
}

const CHECKPOINT = "checkpoint";

/**
 * The consumer's committed position: 8 bytes (little-endian) and their CRC-32, replaced
 * atomically (written to a temporary file, synced, renamed over, directory synced), so a
 * crash leaves either the old or the new position, never a mixture.
 */
export async function writeCheckpoint(dir: string, position: number): Promise<void> {
  const data = Buffer.alloc(12);
  data.writeBigUInt64LE(BigInt(position), 0);
  data.writeUInt32LE(crc32(data.subarray(0, 8)), 8);
  const temporary = join(dir, `${CHECKPOINT}.tmp`);
  const handle = await open(temporary, "w");
  try {
    await writeFully(handle, data, 0);
    await handle.sync();
  } finally {
    await handle.close();
  }
  await rename(temporary, join(dir, CHECKPOINT));
  await syncDirectory(dir);
}

/** The committed position; `absent` when none was written, `damaged` when the file does not check. */
export async function readCheckpoint(dir: string): Promise<number | "absent" | "damaged"> {
  let data: Buffer;
  try {
    data = await readFile(join(dir, CHECKPOINT));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return "absent";
    throw err;
  }
  if (data.length !== 12 || crc32(data.subarray(0, 8)) !== data.readUInt32LE(8)) return "damaged";
  return Number(data.readBigUInt64LE(0));
}

/**
 * Appends messages set aside (refused by the store, or not of the topic's shape), one JSON
 * line each (`at`, `error`, `message`), to a log's dead-letter file, synced: kept for a
 * person to look at, never silently dropped.
 */
export async function appendDeadLetters(path: string, messages: readonly unknown[], error: string): Promise<void> {
  const at = new Date().toISOString();
  await appendFile(path, messages.map((message) => `${JSON.stringify({ at, error, message })}\n`).join(""));
  const handle = await open(path, "r");
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * Where the embedded logs live: `<DATA_DIR>/log/<topic>/process-<i>/`, one directory per
 * process of a cluster (PROCESS_INDEX), so no two processes ever append to one log.
 */
const topicDir = (dataDir: string, topic: string): string => join(dataDir, "log", topic.replace(/[^A-Za-z0-9._-]/g, "_"));

export const processLogDir = (dataDir: string, topic: string, index: number): string => join(topicDir(dataDir, topic), `process-${index}`);

/** The log directories of processes beyond `processes` (left when PROCESSES was lowered). */
export async function logDirsBeyond(dataDir: string, topic: string, processes: number): Promise<string[]> {
  let names: string[];
  try {
    names = await readdir(topicDir(dataDir, topic));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw err;
  }
  return names
    .map((name) => ({ name, index: /^process-(\d+)$/.exec(name)?.[1] }))
    .filter((d): d is { name: string; index: string } => d.index !== undefined && Number(d.index) >= processes)
    .map((d) => join(topicDir(dataDir, topic), d.name));
}
