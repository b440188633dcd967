// The first module of a worker thread: its entry is TypeScript run through tsx (as the
// service is), and a worker thread does not inherit the process's loader, so it is
// registered here first. Once the entry module has run (its top-level awaits included) the
// thread says so (`booted`: supervisedThread.ts), so that the service listens only then.
import { parentPort, workerData } from "node:worker_threads";

if (workerData.entry.endsWith(".ts")) {
  const { register } = await import("tsx/esm/api");
  register();
}
await import(workerData.entry);
parentPort.postMessage({ type: "booted" });
