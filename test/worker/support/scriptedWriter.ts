/** A writer thread whose handler does what each message says (writerThreads.test.ts). */
import { RetryableError } from "../../../services/errors.js";
import { batchEvents } from "../../../services/metrics.js";
import { runWriterThread } from "../../../services/worker/writerThreads.js";

export type Scripted = { readonly do: "store" | "outage" | "refuse" | "die" | "hold" };

runWriterThread<Scripted>(async (messages) => {
  batchEvents.observe({ topic: "scripted" }, messages.length);
  for (const m of messages) {
    if (m.do === "outage") throw new RetryableError("store unavailable", 4);
    if (m.do === "refuse") throw new Error("refused by the store");
    if (m.do === "die") process.exit(3);
    if (m.do === "hold") await new Promise((r) => setTimeout(r, 300));
  }
});
