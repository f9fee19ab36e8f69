// Offline: retries that honour RetryInfo, readable BadRequest errors and canonical-JSON reading,
// against an in-process gRPC server built from the same generated service definition.
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { gzipSync } from "node:zlib";
import * as grpc from "@grpc/grpc-js";
import { create, fromJson, toBinary } from "@bufbuild/protobuf";
import { anyPack } from "@bufbuild/protobuf/wkt";
import { BadRequestSchema, RetryInfoSchema } from "../gen/google/rpc/error_details_pb.js";
import { StatusSchema } from "../gen/google/rpc/status_pb.js";
import {
  CompareProfilesResponseSchema, Decision, DeleteModelResponseSchema, DeleteTenantDataResponseSchema, ListModelsResponseSchema,
  Multiplicity, SubmitPredictionsResponseSchema,
} from "../gen/holistic/v1/evaluation_service_pb.js";
import { ModelSummarySchema, WindowPreset } from "../gen/holistic/v1/profile_pb.js";
import {
  contentBatchId, evaluationServiceDefinition, HolisticClient, InvalidPredictionsError, PredictionSchema, readPredictions, Task,
} from "../src/index.js";

function failure(code, message, ...details) {
  const status = create(StatusSchema, { code, message, details: details.map(([schema, init]) => anyPack(schema, create(schema, init))) });
  const metadata = new grpc.Metadata();
  metadata.set("grpc-status-details-bin", Buffer.from(toBinary(StatusSchema, status)));
  return { code, details: message, metadata };
}

// The fake gateway answers SubmitPredictions from a script of replies, one per call.
let server;
let target;
let script = [];
const seen = [];
const MODELS = ["a", "b", "c", "d", "e"];
const listed = [];
const deletions = []; // [method, request] of each deletion call; the first of each is UNAVAILABLE
const comparisons = []; // each CompareProfiles request
before(async () => {
  server = new grpc.Server();
  server.addService(evaluationServiceDefinition, {
    submitPredictions(call, callback) {
      seen.push(call.request);
      const next = script.shift();
      if (next.code) callback(next);
      else callback(null, create(SubmitPredictionsResponseSchema, { batchId: call.request.batchId, acceptedCount: call.request.predictions.length }));
    },
    // Pages of two of MODELS; a token is the next index.
    listModels(call, callback) {
      listed.push(call.request.pageToken);
      const start = Number(call.request.pageToken || 0);
      const end = Math.min(start + 2, MODELS.length);
      const models = MODELS.slice(start, end).map((model) => create(ModelSummarySchema, { model }));
      callback(null, create(ListModelsResponseSchema, { models, nextPageToken: end < MODELS.length ? String(end) : "", totalSize: MODELS.length }));
    },
    deleteModel(call, callback) {
      deletions.push(["deleteModel", call.request]);
      if (deletions.length === 1) return callback(failure(grpc.status.UNAVAILABLE, "model 'm' is being deleted"));
      callback(null, create(DeleteModelResponseSchema, { removed: [{ keyFamily: "hl:{m:<model>}:meta", count: 1n }] }));
    },
    compareProfiles(call, callback) {
      comparisons.push(call.request);
      callback(null, create(CompareProfilesResponseSchema, { decision: Decision.WORSE, worse: ["accuracy"], multiplicity: "Benjamini-Hochberg" }));
    },
    deleteTenantData(call, callback) {
      deletions.push(["deleteTenantData", call.request]);
      callback(null, create(DeleteTenantDataResponseSchema, { models: ["x", "y"], removed: [{ keyFamily: "hl:{t:<tenant>}:models", count: 1n }] }));
    },
  });
  const port = await new Promise((resolve, reject) =>
    server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))));
  target = `127.0.0.1:${port}`;
});
after(() => server.forceShutdown());

const prediction = (id) => create(PredictionSchema, { id, scenario: "s", task: Task.OPEN_QA, output: "a", references: ["a"] });

function client(delays) {
  return new HolisticClient(target, { sleep: async (ms) => delays.push(ms), maxAttempts: 4 });
}

// The ids were computed by the Python client (holistic_client.client.content_batch_id), as the Go
// client's test does: maps in other than key order (integer-like, non-ASCII and prefix keys), zero optionals.
test("content batch ids equal the Python and Go clients' ids, maps included", () => {
  const json = (text) => fromJson(PredictionSchema, JSON.parse(text));
  const p1 = json(`{"id":"q1","scenario":"support_qa","task":"TASK_OPEN_QA","input":"Wie geht's? 🙂","output":"gut",
    "references":["gut","sehr gut"],"confidence":0.75,"correct":true,"groups":{"region":"eu","dialect":"sae","gender":"female"},
    "metadata":{"b":"2","a":"1"},"timing":{"latency":"0.840s","promptTokens":12},"producedAt":"2026-11-30T00:00:00.500Z",
    "perturbation":{"name":"typos","family":"PERTURBATION_FAMILY_ROBUSTNESS","originalId":"q0"}}`);
  const p2 = json(`{"id":"q2","scenario":"news","task":"TASK_SUMMARIZATION","output":"Rates rose.","source":"The bank raised rates.","confidence":0}`);
  const keys = json(`{"id":"k","groups":{"é":"1","z":"2","10":"3","9":"4","～":"5","🙂":"6"}}`);
  assert.equal(contentBatchId("m1", [p1, p2]), "c-31cc181924a98cd233b0b4e3ed032bc7");
  assert.equal(contentBatchId("", [p2]), "c-9b1cf3978170cee18bb565a1915cf1fa");
  assert.equal(contentBatchId("m", [keys]), "c-c5da5c0ebc2984a72374cf010a3cafd8");
  const prefixes = json(`{"id":"k","groups":{"b":"1","ab":"2","a":"3","":"4","c":"5"},"metadata":{"age":"","age_group":"x"}}`);
  assert.equal(contentBatchId("m", [prefixes]), "c-96e42fb7e8a0ff5ab3e1ab04ab98c017"); // upb: "ab" before "a", "" last
});

test("RESOURCE_EXHAUSTED is retried after exactly the server's RetryInfo delay, with the same batch id", async () => {
  const delays = [];
  script = [
    failure(grpc.status.RESOURCE_EXHAUSTED, "backlog", [RetryInfoSchema, { retryDelay: { seconds: 1n, nanos: 500_000_000 } }]),
    failure(grpc.status.RESOURCE_EXHAUSTED, "backlog", [RetryInfoSchema, { retryDelay: { seconds: 0n, nanos: 250_000_000 } }]),
    {},
  ];
  seen.length = 0;
  const c = client(delays);
  const reply = await c.submit([prediction("p1")], { model: "m" });
  c.close();
  assert.deepEqual(delays, [1500, 250]);
  assert.equal(reply.acceptedCount, 1);
  assert.equal(seen.length, 3);
  assert.ok(seen.every((r) => r.batchId === seen[0].batchId && r.batchId === contentBatchId("m", [prediction("p1")])));
});

test("RESOURCE_EXHAUSTED without RetryInfo (a message over the size limit) is not retried", async () => {
  const delays = [];
  script = [failure(grpc.status.RESOURCE_EXHAUSTED, "message too large")];
  const c = client(delays);
  await assert.rejects(c.submit([prediction("p1")]), (err) => err.codeName === "RESOURCE_EXHAUSTED" && /too large/.test(err.message));
  c.close();
  assert.deepEqual(delays, []);
});

test("UNAVAILABLE is retried with growing backoff until maxAttempts", async () => {
  const delays = [];
  script = Array.from({ length: 4 }, () => failure(grpc.status.UNAVAILABLE, "redis down"));
  const c = client(delays);
  await assert.rejects(c.submit([prediction("p1")]), (err) => err.codeName === "UNAVAILABLE");
  c.close();
  assert.equal(delays.length, 3); // 4 attempts, 3 waits: 100, 200, 400 ms, each with jitter in [50 %, 100 %]
  [100, 200, 400].forEach((base, i) => assert.ok(delays[i] >= base / 2 && delays[i] <= base, `${delays[i]} vs ${base}`));
});

test("BadRequest field violations become a readable InvalidPredictionsError", async () => {
  script = [failure(grpc.status.INVALID_ARGUMENT, "2 invalid field(s)", [BadRequestSchema, {
    fieldViolations: [
      { field: "predictions[0].confidence", description: "must be a probability in [0, 1], got 2.0" },
      { field: "predictions[1].id", description: "is required" },
    ],
  }])];
  const c = client([]);
  const err = await c.submit([prediction("p1"), prediction("")]).catch((e) => e);
  c.close();
  assert.ok(err instanceof InvalidPredictionsError);
  assert.equal(err.codeName, "INVALID_ARGUMENT");
  assert.deepEqual(err.violations.map((v) => v.field), ["predictions[0].confidence", "predictions[1].id"]);
  assert.equal(err.message, "INVALID_ARGUMENT: 2 invalid field(s)\n  predictions[0].confidence: must be a probability in [0, 1], got 2.0\n  predictions[1].id: is required");
});

test("submitLines drops only the rejected lines and resubmits the rest", async () => {
  script = [
    failure(grpc.status.INVALID_ARGUMENT, "1 invalid field(s)", [BadRequestSchema, { fieldViolations: [{ field: "predictions[1].confidence", description: "bad" }] }]),
    {},
  ];
  seen.length = 0;
  const lines = [1, 2, 3].map((n) => ({ number: n, prediction: prediction(`p${n}`) }));
  const c = client([]);
  const report = await c.submitLines(lines, { model: "m" });
  c.close();
  assert.deepEqual(report.rejected, [{ line: 2, field: "predictions[1].confidence", reason: "bad" }]);
  assert.equal(report.accepted, 2);
  assert.deepEqual(seen[1].predictions.map((p) => p.id), ["p1", "p3"]);
});

test("JSON Lines in the canonical mapping: durations, timestamps, enums, maps, optional fields; bad lines numbered", async () => {
  const dir = mkdtempSync(join(tmpdir(), "holistic-node-"));
  const text = [
    JSON.stringify({ id: "q-17", scenario: "mmlu", task: "TASK_MULTIPLE_CHOICE", output: "Paris", references: ["Paris"], confidence: 0.91,
      timing: { latency: "1.840s", timeToFirstToken: "0.41s", promptTokens: 212, completionTokens: 3 },
      groups: { dialect: "aae" }, producedAt: "2026-11-30T09:12:44.250Z", correct: false }),
    "",
    "{not json",
    JSON.stringify({ id: "q-18", task: "TASK_NOT_A_TASK" }),
  ].join("\n");
  const path = join(dir, "p.jsonl.gz");
  writeFileSync(path, gzipSync(text));
  const lines = [];
  for await (const line of readPredictions(path)) lines.push(line);
  assert.deepEqual(lines.map((l) => l.number), [1, 3, 4]);
  const p = lines[0].prediction;
  assert.equal(p.timing.latency.seconds, 1n);
  assert.equal(p.timing.latency.nanos, 840_000_000);
  assert.equal(p.timing.timeToFirstToken.nanos, 410_000_000);
  assert.equal(p.producedAt.seconds, BigInt(Date.UTC(2026, 10, 30, 9, 12, 44) / 1000));
  assert.equal(p.producedAt.nanos, 250_000_000);
  assert.equal(p.task, Task.MULTIPLE_CHOICE);
  assert.equal(p.confidence, 0.91);
  assert.equal(p.correct, false); // an optional field set to false is still set
  assert.deepEqual(p.groups, { dialect: "aae" });
  assert.match(lines[1].error, /not a holistic.v1.Prediction/);
  assert.match(lines[2].error, /TASK_NOT_A_TASK/);
});

test("listModels reads every page, passing each page's token to the next call", async () => {
  listed.length = 0;
  const c = client([]);
  const models = await c.listModels();
  const last = await c.listModelsPage({ pageSize: 2, pageToken: "4" });
  c.close();
  assert.deepEqual(models.map((m) => m.model), MODELS);
  assert.deepEqual(listed, ["", "2", "4", "4"]);
  assert.deepEqual([last.models.map((m) => m.model), last.nextPageToken, last.totalSize], [["e"], "", 5]);
});

test("deleteModel sends the model and its tenant, retries UNAVAILABLE (it is idempotent) and returns what was removed", async () => {
  const delays = [];
  const c = client(delays);
  const reply = await c.deleteModel("m", { tenant: "team-a" });
  const tenant = await c.deleteTenantData("team-a");
  c.close();
  assert.equal(delays.length, 1);
  assert.deepEqual(deletions.map(([method, r]) => [method, r.model, r.tenant]),
    [["deleteModel", "m", "team-a"], ["deleteModel", "m", "team-a"], ["deleteTenantData", undefined, "team-a"]]);
  assert.deepEqual(reply.removed.map((r) => [r.keyFamily, r.count]), [["hl:{m:<model>}:meta", 1n]]);
  assert.deepEqual([tenant.models, tenant.removed.map((r) => [r.keyFamily, r.count])], [["x", "y"], [["hl:{t:<tenant>}:models", 1n]]]);
});

test("compareProfiles sends the models, the window, the margin, the cells judged and the method", async () => {
  const c = client([]);
  try {
    const reply = await c.compareProfiles("a", { otherModel: "b", window: "1h", margin: 0.02, failOn: ["accuracy"], multiplicity: "bh" });
    assert.equal(reply.decision, Decision.WORSE);
    assert.deepEqual(reply.worse, ["accuracy"]);
    const [request] = comparisons;
    assert.deepEqual([request.model, request.otherModel, request.margin, request.level, request.failOn, request.multiplicity],
      ["a", "b", 0.02, 0, ["accuracy"], Multiplicity.BENJAMINI_HOCHBERG]);
    assert.deepEqual(request.window, { case: "preset", value: WindowPreset.LAST_HOUR });
    await assert.rejects(c.compareProfiles("a", { multiplicity: "bonferroni" }), /unknown multiplicity/);
  } finally {
    c.close();
  }
});
