import * as tf from "@tensorflow/tfjs";
import "@tensorflow/tfjs-backend-wasm";

let ready: Promise<typeof tf> | null = null;

/**
 * tfjs on its WebAssembly backend (several times faster than the pure-JS cpu backend here).
 * Chosen before any tensor is created, so the cpu backend never starts and never prints its
 * "install tfjs-node" banner.
 */
export function tensorflow(): Promise<typeof tf> {
  ready ??= (async () => {
    if (tf.getBackend() !== "wasm") {
      const ok = await tf.setBackend("wasm");
      if (!ok) throw new Error("the tfjs wasm backend could not start");
    }
    await tf.ready();
    return tf;
  })();
  return ready;
}

/** Lets the event loop run (HTTP, other jobs) between CPU-heavy steps. */
export function yieldToEventLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
