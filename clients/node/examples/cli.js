#!/usr/bin/env node
// A small command line over the client:
//   holistic-node submit FILE [--model M] [--batch-size N]
//   holistic-node profile MODEL [--window 24h] [--json]
//   holistic-node watch MODEL [--window 1h]
//   holistic-node models
//   holistic-node delete-model MODEL [--tenant T] --yes      (an admin token)
//   holistic-node delete-tenant TENANT --yes                 (an admin token)
// --target host:port (HOLISTIC_TARGET, default 127.0.0.1:50051), --token (HOLISTIC_TOKEN),
// --wait-for-ready (wait for a gateway that is not up yet; without it an unreachable one fails at once).
import { parseArgs } from "node:util";
import { DimensionKind, HolisticClient, ProfileSchema, toJsonString } from "../src/index.js";

const { values: opts, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    target: { type: "string", default: process.env.HOLISTIC_TARGET ?? "127.0.0.1:50051" },
    token: { type: "string", default: process.env.HOLISTIC_TOKEN },
    model: { type: "string", default: "" },
    "batch-size": { type: "string", default: "500" },
    window: { type: "string", default: "all" },
    json: { type: "boolean", default: false },
    // wait (and retry) for a gateway that is not up yet, instead of failing at once naming it
    "wait-for-ready": { type: "boolean", default: false },
    tenant: { type: "string", default: "" },
    yes: { type: "boolean", default: false },
  },
});
const [command, arg] = positionals;
const axis = (kind) => DimensionKind[kind].toLowerCase();

function show(profile) {
  if (opts.json) return console.log(toJsonString(ProfileSchema, profile));
  console.log(`${profile.model}: ${profile.counts.windowPredictions} predictions (${opts.window})`);
  // accepted, not yet applied: an absent axis may only be on its way
  const pending = profile.pending.filter((f) => f.pendingPredictions > 0n).map((f) => `${f.family} ${f.pendingPredictions}`);
  if (pending.length) console.log(`  pending: ${pending.join(", ")}`);
  // a family that scores a share of the predictions (HOLISTIC_<FAMILY>_SAMPLE_RATE) says so beside its value
  const sampled = new Map(profile.families.filter((f) => f.sampleRate !== undefined).map((f) => [f.family, f.sampleRate]));
  for (const d of profile.dimensions) {
    const rate = sampled.get(d.family);
    const value = d.score === undefined ? `— ${d.absentReason}` : d.score.toFixed(3);
    console.log(`  ${axis(d.kind).padEnd(12)} ${value}${rate === undefined ? "" : ` sampled ${Number((rate * 100).toPrecision(3))} %`}`);
  }
  // per segment key (HOLISTIC_SEGMENT_KEYS) and family: its main metric per value, `other` last
  for (const b of profile.segments) {
    console.log(`  segment ${b.key}: ${b.family} ${b.metric}${b.lowerIsBetter ? " (lower is better)" : ""}`);
    for (const v of b.values) {
      const m = v.metric;
      const iv = m.interval ? ` 95% ${m.interval.lower.toFixed(3)}–${m.interval.upper.toFixed(3)}` : "";
      console.log(`    ${(v.other ? "(other)" : v.value).padEnd(16)} ${m.value.toFixed(3)}${iv} n=${m.count}`);
    }
  }
}

function removed(what, reply) {
  if (!reply.removed.length) return console.log(`deleted ${what}: nothing left to remove`);
  console.log(`deleted ${what}:`);
  for (const r of reply.removed) console.log(`  ${r.keyFamily}\t${r.count}`);
}

const deleting = command === "delete-model" || command === "delete-tenant";
if (deleting && arg && !opts.yes) {
  console.error(`error: not deleting without --yes (${command} ${arg} cannot be undone)`);
  process.exit(2);
}
const client = new HolisticClient(opts.target, { token: opts.token, waitForReady: opts["wait-for-ready"] });
try {
  if (command === "submit" && arg) {
    const report = await client.submitFile(arg, { model: opts.model, batchSize: Number(opts["batch-size"]) });
    const n = (k, word, plural = `${word}s`) => `${k} ${k === 1 ? word : plural}`;
    console.log(`accepted ${n(report.accepted, "prediction")} in ${n(report.batches, "batch", "batches")} (${report.duplicates} already accepted earlier); rejected ${n(report.rejected.length, "line")}`);
    for (const r of report.rejected) console.error(`  line ${r.line}: ${r.field} ${r.reason}`);
    process.exitCode = report.rejected.length ? 1 : 0;
  } else if (command === "profile" && arg) {
    show(await client.getProfile(arg, opts.window));
  } else if (command === "watch" && arg) {
    for await (const profile of client.watchProfile(arg, opts.window)) show(profile);
  } else if (command === "models") {
    for (const m of await client.listModels()) console.log(`${m.model}\t${m.acceptedPredictions}`);
  } else if (command === "delete-model" && arg) {
    removed(`model ${arg}`, await client.deleteModel(arg, { tenant: opts.tenant }));
  } else if (command === "delete-tenant" && arg) {
    const reply = await client.deleteTenantData(arg);
    removed(`tenant ${arg} (${reply.models.length} ${reply.models.length === 1 ? "model" : "models"})`, reply);
  } else {
    console.error("usage: holistic-node submit FILE | profile MODEL | watch MODEL | models | delete-model MODEL --yes"
      + " | delete-tenant TENANT --yes  [--target] [--token] [--window] [--json] [--tenant]");
    process.exitCode = 2;
  }
} catch (err) {
  console.error(`error: ${err.message}`);
  process.exitCode = 2;
} finally {
  client.close();
}
