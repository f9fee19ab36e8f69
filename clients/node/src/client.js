// The Node.js client: batches with content-derived ids, retries that honour the server's RetryInfo,
// profile reads and watches. Messages are protobuf-es objects built from the generated stubs.
import { createHash } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import * as grpc from "@grpc/grpc-js";
import { create, ScalarType, toBinary } from "@bufbuild/protobuf";
import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import {
  CompareProfilesRequestSchema, DeleteModelRequestSchema, DeleteTenantDataRequestSchema, GetProfileRequestSchema,
  ListModelsRequestSchema, Multiplicity, SubmitPredictionsRequestSchema, WatchProfileRequestSchema,
} from "../gen/holistic/v1/evaluation_service_pb.js";
import { WindowPreset } from "../gen/holistic/v1/profile_pb.js";
import { connectCause, fromServiceError, InvalidPredictionsError, isConnectFailure, retryDelayMs, UnreachableError } from "./errors.js";
import { readPredictions } from "./jsonl.js";
import { EvaluationServiceClient } from "./service.js";

export const WINDOWS = {
  all: WindowPreset.ALL_TIME,
  "15m": WindowPreset.LAST_15_MINUTES,
  "1h": WindowPreset.LAST_HOUR,
  "24h": WindowPreset.LAST_DAY,
  "1d": WindowPreset.LAST_DAY,
  "7d": WindowPreset.LAST_WEEK,
};
const MULTIPLICITY = { holm: Multiplicity.HOLM, bh: Multiplicity.BENJAMINI_HOCHBERG };
const PREDICTION_PATH = /^predictions\[(\d+)\]/;

/** upb's order of string map keys: byte order, except that a key which prefixes another comes after it. */
function upbKeyOrder(a, b) {
  const x = Buffer.from(a), y = Buffer.from(b);
  const n = Math.min(x.length, y.length);
  return Buffer.compare(x.subarray(0, n), y.subarray(0, n)) || y.length - x.length;
}

/**
 * A message encoded as Python's protobuf (upb) writes it with deterministic=True: fields in number order,
 * map entries in upb's key order. protobuf-es writes a map in its object's key order (insertion order,
 * integer-like keys first), so a batch with groups {b, a} would otherwise get another id than in Python.
 */
function deterministicBinary(schema, message) {
  const w = new BinaryWriter();
  for (const field of [...schema.fields].sort((a, b) => a.number - b.number)) {
    const value = message[field.localName];
    if (field.oneof) throw new Error(`deterministicBinary: oneof ${field.oneof.name} is not supported`);
    if (field.fieldKind === "map") {
      if (field.mapKey !== ScalarType.STRING || field.mapKind !== "scalar" || field.scalar !== ScalarType.STRING) {
        throw new Error(`deterministicBinary: only map<string, string> is supported (${field.name})`);
      }
      for (const key of Object.keys(value).sort(upbKeyOrder)) {
        w.tag(field.number, WireType.LengthDelimited).fork()
          .tag(1, WireType.LengthDelimited).string(key).tag(2, WireType.LengthDelimited).string(value[key]).join();
      }
    } else if (field.fieldKind === "message" && value !== undefined) {
      w.tag(field.number, WireType.LengthDelimited).bytes(deterministicBinary(field.message, value));
    } else if (field.fieldKind === "list" && field.listKind === "message") {
      for (const item of value) w.tag(field.number, WireType.LengthDelimited).bytes(deterministicBinary(field.message, item));
    } else if (field.fieldKind !== "message") { // a scalar, an enum or a list of them, as protobuf-es writes it alone
      const only = create(schema);
      only[field.localName] = value;
      w.raw(toBinary(schema, only));
    }
  }
  return w.finish();
}

/**
 * A batch id derived from the content: re-sending the same predictions is a no-op. The same batch gets
 * the same id from the Python and Go clients: "c-" and 32 hex digits of the SHA-256 of
 * SubmitPredictionsRequest{model, predictions} as Python serializes it with deterministic=True.
 */
export function contentBatchId(model, predictions) {
  const body = deterministicBinary(SubmitPredictionsRequestSchema, create(SubmitPredictionsRequestSchema, { model, predictions }));
  return "c-" + createHash("sha256").update(body).digest("hex").slice(0, 32);
}

function windowFields(window) {
  if (window && typeof window === "object" && "start" in window) {
    return { window: { case: "range", value: { startTime: timestampFromDate(window.start), endTime: timestampFromDate(window.end) } } };
  }
  if (!(window in WINDOWS)) throw new RangeError(`unknown window ${JSON.stringify(window)}; use one of ${Object.keys(WINDOWS).join(", ")} or {start, end}`);
  return { window: { case: "preset", value: WINDOWS[window] } };
}

const CONNECT_TIMEOUT_MS = 5_000; // a gateway that accepted the connection answers well within this

export class HolisticClient {
  /**
   * @param {string} target gateway host:port
   * @param {object} [options] token, timeoutMs (30 s), maxAttempts (12), credentials (grpc.ChannelCredentials),
   *   onRetry({attempt, delayMs, error}), sleep(ms) (for tests), waitForReady (true; false: until a call has
   *   reached the gateway, a connection that cannot be made throws UnreachableError at once, as the CLI wants)
   */
  constructor(target = "127.0.0.1:50051", options = {}) {
    this.stub = new EvaluationServiceClient(target, options.credentials ?? grpc.credentials.createInsecure(), {
      "grpc.max_send_message_length": 64 << 20,
      "grpc.max_receive_message_length": 64 << 20,
    });
    this.metadata = new grpc.Metadata();
    if (options.token) this.metadata.set("authorization", `Bearer ${options.token}`);
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.maxAttempts = options.maxAttempts ?? 12;
    this.onRetry = options.onRetry;
    this.sleep = options.sleep ?? sleep;
    this.target = target;
    this.waitForReady = options.waitForReady ?? true;
    this.reached = false; // a call has had an answer from the gateway
  }

  /** A connection never made, on a client that does not wait for the gateway to be ready. */
  #unreachable(err) {
    return !this.waitForReady && !this.reached && isConnectFailure(err) ? new UnreachableError(this.target, connectCause(err)) : null;
  }

  close() {
    this.stub.close();
  }

  #unary(method, request) {
    return new Promise((resolve, reject) => {
      const deadline = new Date(Date.now() + this.timeoutMs);
      this.stub[method](request, this.metadata, { deadline }, (err, reply) => (err ? reject(err) : resolve(reply)));
    });
  }

  /** RetryInfo's delay for RESOURCE_EXHAUSTED (none: not retryable), backoff with jitter for UNAVAILABLE. */
  #retryDelay(err, attempt) {
    if (err.code === grpc.status.RESOURCE_EXHAUSTED) return retryDelayMs(err);
    if (err.code === grpc.status.UNAVAILABLE || err.code === grpc.status.DEADLINE_EXCEEDED) {
      return Math.min(10_000, 100 * 2 ** (attempt - 1)) * (0.5 + Math.random() / 2);
    }
    return null;
  }

  /** Before the first call of a client that does not wait: one health check bounded by CONNECT_TIMEOUT_MS,
   * so a host that accepts the connection and never answers fails in seconds, not after 12 attempts of 30 s.
   * Any answer (even UNIMPLEMENTED) is a server; a refused connection is named at once. */
  async #checkReachable() {
    if (this.waitForReady || this.reached) return;
    await new Promise((resolve, reject) => {
      const options = { deadline: new Date(Date.now() + CONNECT_TIMEOUT_MS) };
      this.stub.makeUnaryRequest("/grpc.health.v1.Health/Check", () => Buffer.alloc(0), (b) => b, {}, new grpc.Metadata(), options, (err) => {
        if (err?.code === grpc.status.DEADLINE_EXCEEDED) {
          return reject(new UnreachableError(this.target, `no answer within ${CONNECT_TIMEOUT_MS / 1000} s`));
        }
        const unreachable = err ? this.#unreachable(err) : null;
        if (unreachable) return reject(unreachable);
        this.reached = true;
        return resolve();
      });
    });
  }

  async #call(method, request) {
    await this.#checkReachable();
    for (let attempt = 1; ; attempt += 1) {
      try {
        const reply = await this.#unary(method, request);
        this.reached = true;
        return reply;
      } catch (err) {
        const unreachable = this.#unreachable(err);
        if (unreachable) throw unreachable;
        const delayMs = typeof err?.code === "number" ? this.#retryDelay(err, attempt) : null;
        if (delayMs === null || attempt >= this.maxAttempts) throw fromServiceError(err);
        this.onRetry?.({ attempt, delayMs, error: fromServiceError(err) });
        await this.sleep(delayMs);
      }
    }
  }

  /** Submit one batch; retried safely, since the same batch id and content is idempotent. */
  async submit(predictions, { model = "", batchId } = {}) {
    const request = create(SubmitPredictionsRequestSchema, { model, predictions });
    request.batchId = batchId ?? contentBatchId(model, predictions);
    return this.#call("submitPredictions", request);
  }

  /** Submit lines ({number, prediction} or {number, error}) in per-model batches; report rejected lines. */
  async submitLines(lines, { batchSize = 500, model = "", onBatch } = {}) {
    const report = { accepted: 0, duplicates: 0, batches: 0, rejected: [] };
    const pending = new Map();
    for await (const line of lines) {
      if (!line.prediction) {
        report.rejected.push({ line: line.number, field: "", reason: line.error });
        continue;
      }
      const key = line.prediction.model || model;
      if (!pending.has(key)) pending.set(key, []);
      const chunk = pending.get(key);
      chunk.push(line);
      if (chunk.length >= batchSize) {
        pending.delete(key);
        await this.#submitChunk(chunk, model, report, onBatch);
      }
    }
    for (const chunk of pending.values()) await this.#submitChunk(chunk, model, report, onBatch);
    return report;
  }

  /** Submit a JSON Lines file (optionally .gz) of canonical-JSON predictions. */
  async submitFile(path, options = {}) {
    return this.submitLines(readPredictions(path), options);
  }

  async #submitChunk(chunk, model, report, onBatch) {
    const size = chunk.length;
    while (chunk.length) {
      let reply;
      try {
        reply = await this.submit(chunk.map((l) => l.prediction), { model });
      } catch (err) {
        if (!(err instanceof InvalidPredictionsError) || !err.violations.length) throw err;
        const bad = new Map();
        for (const v of err.violations) {
          const m = PREDICTION_PATH.exec(v.field);
          if (!m) { // a batch-level problem: every line of the chunk is rejected
            report.rejected.push(...chunk.map((l) => ({ line: l.number, field: v.field, reason: v.description })));
            chunk = [];
            break;
          }
          const i = Number(m[1]);
          bad.set(i, [...(bad.get(i) ?? []), v]);
        }
        for (const [i, problems] of bad) {
          report.rejected.push(...problems.map((v) => ({ line: chunk[i].number, field: v.field, reason: v.description })));
        }
        chunk = chunk.filter((_, i) => !bad.has(i));
        continue;
      }
      report.batches += 1;
      if (reply.duplicate) report.duplicates += reply.acceptedCount;
      else report.accepted += reply.acceptedCount;
      break;
    }
    onBatch?.(size);
  }

  async getProfile(model, window = "all") {
    const reply = await this.#call("getProfile", create(GetProfileRequestSchema, { model, ...windowFields(window) }));
    return reply.profile;
  }

  /**
   * `model` against `otherModel` over one window, or (otherModel "") `model`'s window against the window of
   * equal length just before it: every cell tested, the p-values adjusted (multiplicity "holm" or "bh"), and
   * the decision over failOn (empty: every axis). The reply is a CompareProfilesResponse.
   */
  async compareProfiles(model, { otherModel = "", window = "all", margin = 0, level = 0, failOn = [], multiplicity = "holm" } = {}) {
    if (!(multiplicity in MULTIPLICITY)) throw new RangeError(`unknown multiplicity ${JSON.stringify(multiplicity)}; use holm or bh`);
    const request = create(CompareProfilesRequestSchema, {
      model, otherModel, margin, level, failOn, multiplicity: MULTIPLICITY[multiplicity], ...windowFields(window),
    });
    return this.#call("compareProfiles", request);
  }

  /** The profile now, then a fresh one per applied batch; stop with `break` or an AbortSignal. */
  async *watchProfile(model, window = "all", { signal } = {}) {
    await this.#checkReachable();
    const call = this.stub.watchProfile(create(WatchProfileRequestSchema, { model, ...windowFields(window) }), this.metadata);
    const abort = () => call.cancel();
    signal?.addEventListener("abort", abort, { once: true });
    try {
      for await (const reply of call) {
        this.reached = true;
        yield reply.profile;
      }
    } catch (err) {
      if (err?.code === grpc.status.CANCELLED) return;
      throw this.#unreachable(err) ?? fromServiceError(err);
    } finally {
      signal?.removeEventListener("abort", abort);
      call.cancel();
    }
  }

  // Every model of the caller's tenant, in name order: all of listModelsPage's pages.
  async listModels() {
    const models = [];
    let pageToken = "";
    do {
      const page = await this.listModelsPage({ pageToken });
      models.push(...page.models);
      pageToken = page.nextPageToken;
    } while (pageToken);
    return models;
  }

  // One page of at most pageSize models (0: the server's maximum, 10,000 by default) after the page
  // whose nextPageToken is pageToken ("": the first page).
  async listModelsPage({ pageSize = 0, pageToken = "" } = {}) {
    return this.#call("listModels", create(ListModelsRequestSchema, { pageSize, pageToken }));
  }

  // Admin (a token of HOLISTIC_ADMIN_TOKENS): delete everything the service keeps of the tenant's model
  // (tenant "": the default tenant). The reply lists what was removed per key family; idempotent, so retried.
  async deleteModel(model, { tenant = "" } = {}) {
    return this.#call("deleteModel", create(DeleteModelRequestSchema, { model, tenant }));
  }

  // Admin: delete everything the service keeps of a tenant ("default" included): the reply names its models
  // deleted and lists what was removed per key family.
  async deleteTenantData(tenant) {
    return this.#call("deleteTenantData", create(DeleteTenantDataRequestSchema, { tenant }));
  }
}
