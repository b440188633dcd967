import { readFileSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/**
 * Keeps two processes from appending to one log directory. The lock file names the holder
 * by boot, pid and the process's start time (from /proc), so a lock left by a killed
 * process is taken over even when its pid now belongs to another process (pids are reused,
 * and in a container a restarted service often gets the same one). Where /proc is missing
 * the pid alone is checked.
 */
const LOCK = "lock";
const held = new Set<string>();

function procField(path: string): string | null {
  try {
    return readFileSync(path, "utf8").trim();
  } catch {
    return null;
  }
}

/** The start time of a process in clock ticks since boot (field 22 of /proc/<pid>/stat). */
function startTimeOf(pid: number): string | null {
  const stat = procField(`/proc/${pid}/stat`);
  return stat === null ? null : (stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19] ?? null);
}

function identity(pid: number): string {
  return `${procField("/proc/sys/kernel/random/boot_id") ?? "-"} ${pid} ${startTimeOf(pid) ?? "-"}`;
}

function holderAlive(recorded: string): boolean {
  const [, pidText] = recorded.split(" ");
  const pid = Number(pidText);
  if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid) return false;
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
  return identity(pid) === recorded;
}

export class LogInUseError extends Error {}

function readLock(path: string): string | null {
  try {
    return readFileSync(path, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw err;
  }
}

/** Takes the directory's lock or throws LogInUseError; returns the release. */
export function lockDirectory(dir: string): () => void {
  const path = join(dir, LOCK);
  if (held.has(path)) throw new LogInUseError(`log directory ${dir} is already open in this process`);
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      writeFileSync(path, identity(process.pid), { flag: "wx" });
      held.add(path);
      return () => {
        held.delete(path);
        try {
          unlinkSync(path);
        } catch {
          // already gone
        }
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
    const recorded = readLock(path);
    if (recorded !== null && holderAlive(recorded)) throw new LogInUseError(`log directory ${dir} is in use by process ${recorded.split(" ")[1]}`);
    try {
      unlinkSync(path); // left by a process that is gone
    } catch {
      // taken away meanwhile
    }
  }
  throw new LogInUseError(`log directory ${dir}: could not take its lock`);
}
