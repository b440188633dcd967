// Loaded into every JavaScript thread of a bench's service (`--import`, which worker threads
// inherit, as do the processes of PROCESSES > 1) when BENCH_HEAP_SAMPLES is set: every 50 ms it
// appends the thread's V8 heap and external memory, and in a process's main thread the
// process's RSS, to a file of its own in BENCH_HEAP_SAMPLES_DIR, named by process, thread and
// entry module (bench/support.ts reads them when the service stops). Plain
// JavaScript: the service runs compiled, without a TypeScript loader for this module.
import { openSync, readFileSync, writeSync } from "node:fs";
import { basename, join } from "node:path";
import { getHeapStatistics } from "node:v8";
import { isMainThread, threadId, workerData } from "node:worker_threads";

const MB = 1024 * 1024;
const dir = process.env.BENCH_HEAP_SAMPLES_DIR;
const entry = isMainThread ? "request thread" : basename(String(workerData?.entry ?? "worker")).replace(/\.[cm]?js$/, "");
const file = dir ? join(dir, `${process.pid}-${threadId}-${entry}.samples`) : null;

function rssMb() {
  return Number(/VmRSS:\s+(\d+)/.exec(readFileSync("/proc/self/status", "utf8"))?.[1] ?? 0) / 1024;
}

if (file) {
  // Opened once: the thread writes to it 20 times a second.
  const fd = openSync(file, "a");
  const timer = setInterval(() => {
    const heap = getHeapStatistics();
    const rss = isMainThread ? rssMb().toFixed(1) : "";
    writeSync(fd, `${Date.now()} ${(heap.total_heap_size / MB).toFixed(1)} ${(heap.external_memory / MB).toFixed(1)} ${rss}\n`);
  }, 50);
  timer.unref();
}
