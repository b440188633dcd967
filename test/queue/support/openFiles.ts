import { readdirSync, readlinkSync } from "node:fs";

/** What this process's open descriptors point at under `dir` (a deleted file ends with " (deleted)"). */
export function openFilesUnder(dir: string): string[] {
  return readdirSync("/proc/self/fd").flatMap((fd) => {
    try {
      const target = readlinkSync(`/proc/self/fd/${fd}`);
      return target.startsWith(dir) ? [target] : [];
    } catch {
      return []; // closed meanwhile
    }
  });
}
