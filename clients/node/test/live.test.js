// Against a live gateway with its workers (tests/clients/test_node_client.py starts them and sets
// HOLISTIC_TARGET and HOLISTIC_TOKEN). Skipped without a target locally; a failure under CI.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { test } from "node:test";
import { create, HolisticClient, InvalidPredictionsError, PredictionSchema, Task } from "../src/index.js";

const target = process.env.HOLISTIC_TARGET;
const token = process.env.HOLISTIC_TOKEN;
const skip = !target && !process.env.CI ? "HOLISTIC_TARGET is not set (run through pytest tests/clients/test_node_client.py)" : false;
const model = `node-live-${randomUUID().slice(0, 8)}`;

function prediction(id, output = "Paris", latencyS = 0.5) {
  return create(PredictionSchema, {
    id, scenario: "mmlu", task: Task.MULTIPLE_CHOICE, input: "Capital of France?", output, references: ["Paris"],
    timing: { latency: { seconds: BigInt(Math.floor(latencyS)), nanos: Math.round((latencyS % 1) * 1e9) } },
  });
}

async function until(check, what, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

test("submit, duplicate, profile, models, watch, errors against the gateway", { skip }, async (t) => {
  assert.ok(target, "HOLISTIC_TARGET must be set under CI");
  const client = new HolisticClient(target, { token });
  t.after(() => client.close());

  const batch = [prediction("p1"), prediction("p2"), prediction("p3", "Rome", 3.0)];
  const first = await client.submit(batch, { model });
  assert.equal(first.acceptedCount, 3);
  assert.equal(first.sequence, 1n);
  assert.equal(first.duplicate, false);
  const again = await client.submit(batch, { model });
  assert.equal(again.duplicate, true);
  assert.equal(again.batchId, first.batchId);

  // Any deployment: wait for the two families these checks read (others may be deployed or not,
  // and count what they score), and read the latency objective from the profile, not a default.
  const family = (p, name) => p.families.find((f) => f.family === name);
  const profile = await until(async () => {
    const p = await client.getProfile(model, "24h");
    return ["accuracy", "efficiency"].every((f) => family(p, f)?.count === 3n) ? p : null;
  }, "the accuracy and efficiency workers to apply the batch");
  const dims = Object.fromEntries(profile.dimensions.map((d) => [d.kind, d]));
  assert.equal(dims[1].score, 2 / 3); // accuracy: "Paris" twice, "Rome" once
  const objective = family(profile, "efficiency").metrics.find((m) => m.name === "latency_objective").value;
  const within = [0.5, 0.5, 3.0].filter((s) => s <= objective).length;
  assert.equal(dims[7].score, within / 3); // efficiency: 2/3 under the default 2 s objective
  assert.equal(dims[2].score, undefined); // calibration absent (no confidences), with a reason
  assert.ok(dims[2].absentReason.length > 0);
  assert.equal(profile.counts.acceptedPredictions, 3n);

  const listed = await client.listModels();
  assert.ok(listed.some((m) => m.model === model && m.acceptedPredictions === 3n));

  // Watch: the profile now, then a fresh one once another batch is applied.
  const controller = new AbortController();
  const seen = [];
  for await (const p of client.watchProfile(model, "all", { signal: controller.signal })) {
    const n = p.counts.windowPredictions;
    seen.push(n);
    if (seen.length === 1) await client.submit([prediction("p4")], { model });
    if (n === 4n) controller.abort();
  }
  assert.equal(seen[0], 3n);
  assert.equal(seen.at(-1), 4n);

  await assert.rejects(client.submit([create(PredictionSchema, { ...prediction("bad"), confidence: 2 })], { model }),
    (err) => err instanceof InvalidPredictionsError && err.violations.some((v) => v.field === "predictions[0].confidence")
      && err.message.includes("predictions[0].confidence: must be a probability in [0, 1]"));
  await assert.rejects(client.getProfile(`ghost-${randomUUID()}`), (err) => err.codeName === "NOT_FOUND");
  if (token) {
    const stranger = new HolisticClient(target, { token: "not-the-token" });
    await assert.rejects(stranger.listModels(), (err) => err.codeName === "UNAUTHENTICATED");
    stranger.close();
  }
});
