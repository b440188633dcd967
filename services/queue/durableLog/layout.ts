import { readdir } from "node:fs/promises";
import { join } from "node:path";

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
