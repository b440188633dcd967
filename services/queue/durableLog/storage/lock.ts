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

/** What the lock file of process `pid` says: boot, pid, start time. */
export function processIdentity(pid: number): string {
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
  return processIdentity(pid) === recorded;
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

/**
 * Takes the directory's lock, waiting up to `waitMs` while another live process holds it (a
 * cluster process replaced while its predecessor still drains), else throws LogInUseError;
 * returns the release.
 */
export async function lockDirectory(dir: string, waitMs = 0): Promise<() => void> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    try {
      return tryLock(dir);
    } catch (err) {
      if (!(err instanceof LogHeldError) || Date.now() >= deadline) throw err;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Held by another live process (possibly for a moment more). */
class LogHeldError extends LogInUseError {}

function tryLock(dir: string): () => void {
  const path = join(dir, LOCK);
  if (held.has(path)) throw new LogInUseError(`log directory ${dir} is already open in this process`);
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      writeFileSync(path, processIdentity(process.pid), { flag: "wx" });
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
    if (recorded !== null && holderAlive(recorded)) throw new LogHeldError(`log directory ${dir} is in use by process ${recorded.split(" ")[1]}`);
    try {
      unlinkSync(path); // left by a process that is gone
    } catch {
      // taken away meanwhile
    }
  }
  throw new LogInUseError(`log directory ${dir}: could not take its lock`);
}
