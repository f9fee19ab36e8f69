// Submit two predictions, then print the model's radar axes. Run against `holistic up`:
//   node examples/quickstart.js            (HOLISTIC_TARGET / HOLISTIC_TOKEN to point elsewhere)
import { create, DimensionKind, HolisticClient, PredictionSchema, Task } from "../src/index.js";

const client = new HolisticClient(process.env.HOLISTIC_TARGET ?? "127.0.0.1:50051", {
  token: process.env.HOLISTIC_TOKEN,
});
const predictions = [
  create(PredictionSchema, {
    id: "q1", scenario: "support_qa", task: Task.OPEN_QA,
    input: "How do I reset my router?", output: "Reset it in Settings", references: ["Open Settings and press Reset"],
    timing: { latency: { seconds: 0n, nanos: 840_000_000 } },
  }),
  create(PredictionSchema, {
    id: "q2", scenario: "support_qa", task: Task.OPEN_QA,
    input: "Where is the manual?", output: "On the website", references: ["On our website"],
    timing: { latency: { seconds: 1n, nanos: 200_000_000 } },
  }),
];
try {
  const reply = await client.submit(predictions, { model: "node-quickstart" }); // idempotent per content
  console.log(`batch ${reply.batchId}: sequence ${reply.sequence}, ${reply.acceptedCount} accepted, duplicate=${reply.duplicate}`);
  for await (const profile of client.watchProfile("node-quickstart", "24h")) {
    const done = profile.families.length > 0 && profile.families.every((f) => f.count >= 2n);
    if (!done) continue; // wait until every family has applied the batch
    for (const d of profile.dimensions) {
      console.log(`${DimensionKind[d.kind].toLowerCase().padEnd(12)}${d.score === undefined ? `absent: ${d.absentReason}` : d.score.toFixed(3)}`);
    }
    break;
  }
} catch (err) {
  console.error(err.message); // e.g. "INVALID_ARGUMENT: ...\n  predictions[0].confidence: must be a probability in [0, 1]"
  process.exitCode = 1;
} finally {
  client.close();
}
