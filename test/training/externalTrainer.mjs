// An external trainer for the relay test (test/training/externalTrainer.test.ts): a separate
// process that speaks only the HTTP protocol of docs/training.md, "External trainer protocol".
// It computes no gradient: it reports made-up steps and uploads the starting weights it
// downloaded (real model weights) as the new checkpoint. Plain JavaScript on Node's fetch.
//
//   TRACEHOUSE_URL, TRACEHOUSE_KEY, TRAINER_ID, TRAINER_MODE = train | die | fail
const { TRACEHOUSE_URL: url, TRACEHOUSE_KEY: key, TRAINER_ID: trainerId, TRAINER_MODE: mode = "train" } = process.env;
const auth = { authorization: `Bearer ${key}` };

async function post(path, body) {
  const res = await fetch(`${url}${path}`, { method: "POST", headers: { ...auth, "content-type": "application/json" }, body: JSON.stringify(body) });
  if (!res.ok) throw new Error(`${path} answered ${res.status}: ${await res.text()}`);
  return res;
}

async function claim() {
  for (const deadline = Date.now() + 120_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 200))) {
    const { job } = await (await post("/v1/trainer/claim", { trainer_id: trainerId })).json();
    if (job) return job;
  }
  throw new Error("no job was offered");
}

const job = await claim();
let seq = 0;
const send = (type, data) => post(`/v1/trainer/jobs/${job.id}/messages`, { trainer_id: trainerId, attempt: job.attempt, seq: ++seq, type, data });

// A sign of life at once: the lease (TRAINER_LEASE_MS) runs from the assignment.
await send("heartbeat", {});
const weights = new Uint8Array(await (await post("/file/content", job.weights)).arrayBuffer());
const sequences = job.type === "training.rl" ? job.input.trajectory_groups.reduce((n, g) => n + g.trajectories.length, 0) : 1;
await send("training_started", { num_sequences: sequences });
if (mode === "die") process.exit(0);
if (mode === "fail") {
  await send("training_failed", { error_message: "CUDA out of memory" });
  process.exit(0);
}
await send("gradient_step", { loss: 0.5, learning_rate: 1e-4, grad_norm: 1.25 });
await send("heartbeat", {});
await send("gradient_step", { loss: 0.25, learning_rate: 1e-4, grad_norm: 0.75 });

const form = new FormData();
form.append("project_id", job.input.project_id);
form.append("file", new Blob([weights]), "weights.thlm");
const upload = await fetch(`${url}/file/create`, { method: "POST", headers: auth, body: form });
if (!upload.ok) throw new Error(`/file/create answered ${upload.status}`);
const { digest } = await upload.json();
await send("training_ended", { weights_digest: digest, metrics: { loss: 0.25 } });
console.log(JSON.stringify({ job_id: job.id, attempt: job.attempt, weights_bytes: weights.length, digest }));
