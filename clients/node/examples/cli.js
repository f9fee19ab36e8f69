#!/usr/bin/env node
// A small command line over the client:
//   holistic-node submit FILE [--model M] [--batch-size N]
//   holistic-node profile MODEL [--window 24h] [--json]
//   holistic-node watch MODEL [--window 1h]
//   holistic-node models
//   holistic-node delete-model MODEL [--tenant T] --yes      (an admin token)
//   holistic-node delete-tenant TENANT --yes                 (an admin token)
//   holistic-node compare A [B] [--window 1h] [--fail-on accuracy,toxicity] [--margin M] [--multiplicity holm|bh]
//                 [--allow-empty] [--json]   (A's window against the one before, or A against B; exit 1 worse,
//                 3 not enough data to decide, as `holistic compare`; --margin M: fail only on a cell significantly
//                 worse by more than M, a one-sided test adjusted over the --fail-on cells, shown as "margin M: p")
// --target host:port (HOLISTIC_TARGET, default 127.0.0.1:50051), --token (HOLISTIC_TOKEN),
// --wait-for-ready (wait for a gateway that is not up yet; without it an unreachable one fails at once).
import { parseArgs } from "node:util";
import {
  CompareProfilesResponseSchema, Decision, DimensionKind, HolisticClient, ProfileSchema, toJsonString, Verdict,
} from "../src/index.js";

const { values: opts, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    target: { type: "string", default: process.env.HOLISTIC_TARGET ?? "127.0.0.1:50051" },
    token: { type: "string", default: process.env.HOLISTIC_TOKEN },
    model: { type: "string", default: "" },
    "batch-size": { type: "string", default: "500" },
    window: { type: "string" }, // all (compare: 1h)
    json: { type: "boolean", default: false },
    // wait (and retry) for a gateway that is not up yet, instead of failing at once naming it
    "wait-for-ready": { type: "boolean", default: false },
    tenant: { type: "string", default: "" },
    yes: { type: "boolean", default: false },
    "fail-on": { type: "string", default: "" },
    margin: { type: "string", default: "0" },
    multiplicity: { type: "string", default: "holm" },
    "allow-empty": { type: "boolean", default: false },
  },
});
const [command, arg, other] = positionals;
const WORSE_STATUS = 1, EMPTY_STATUS = 3; // as `holistic compare` and holistic-go compare; 2: errors
const axis = (kind) => DimensionKind[kind].toLowerCase();

function show(profile) {
  if (opts.json) return console.log(toJsonString(ProfileSchema, profile));
  console.log(`${profile.model}: ${profile.counts.windowPredictions} predictions (${opts.window ?? "all"})`);
  // accepted, not yet applied: an absent axis may only be on its way
  const pending = profile.pending.filter((f) => f.pendingPredictions > 0n).map((f) => `${f.family} ${f.pendingPredictions}`);
  if (pending.length) console.log(`  pending: ${pending.join(", ")}`);
  // the part of the window past the tenant's retention: which tiers' buckets are gone
  if (profile.window?.retentionNotice) console.log(`  retention: ${profile.window.retentionNotice}`);
  // a family that scores a share of the predictions (HOLISTIC_<FAMILY>_SAMPLE_RATE) says so beside its value
  const sampled = new Map(profile.families.filter((f) => f.sampleRate !== undefined).map((f) => [f.family, f.sampleRate]));
  for (const d of profile.dimensions) {
    const rate = sampled.get(d.family);
    const value = d.score === undefined ? `— ${d.absentReason}` : d.score.toFixed(3);
    console.log(`  ${axis(d.kind).padEnd(12)} ${value}${rate === undefined ? "" : ` ${rateText(rate)}`}`);
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
  // a scenario some family scored a sample of (its own rate, HOLISTIC_<FAMILY>_SCENARIO_SAMPLE_RATES, or the family's)
  for (const s of profile.scenarios) {
    const rates = Object.entries(s.sampleRates).sort(([a], [b]) => (a < b ? -1 : 1));
    if (rates.length) console.log(`  scenario ${s.scenario}: ${rates.map(([f, r]) => `${f} ${rateText(r)}`).join(", ")}`);
  }
}

function rateText(rate) {
  return `sampled ${Number((rate * 100).toPrecision(3))} %`;
}

function removed(what, reply) {
  if (!reply.removed.length) return console.log(`deleted ${what}: nothing left to remove`);
  console.log(`deleted ${what}:`);
  for (const r of reply.removed) console.log(`  ${r.keyFamily}\t${r.count}`);
}

const fmt = (x, digits = 4) => (x === undefined ? "—" : Number(x.toPrecision(digits)).toString());

async function compare(a, b) {
  const window = opts.window ?? "1h";
  const failOn = opts["fail-on"].split(",").map((n) => n.trim()).filter(Boolean);
  const margin = Number(opts.margin);
  if (!(margin >= 0)) throw new RangeError(`--margin must be a number >= 0, got ${opts.margin}`);
  const reply = await client.compareProfiles(a, { otherModel: b ?? "", window, margin, failOn, multiplicity: opts.multiplicity });
  const label = b ? `${a} vs ${b}` : a;
  if (opts.json) console.log(toJsonString(CompareProfilesResponseSchema, reply));
  else {
    console.log(`${label}: ${reply.before.counts.windowPredictions} predictions before, ${reply.after.counts.windowPredictions} after (${reply.multiplicity}, level ${reply.level})`);
    for (const c of reply.cells) {
      const interval = c.lower === undefined ? "" : ` (95% ${fmt(c.lower, 3)} to ${fmt(c.upper, 3)})`;
      const p = c.pAdjusted === undefined ? "" : `, p ${fmt(c.p, 2)}, adjusted ${fmt(c.pAdjusted, 2)}, ${c.test}`;
      // the margin test (one-sided "worse by at most --margin"); adjusted over the --fail-on cells
      const pm = c.pMargin === undefined ? ""
        : `; margin ${reply.margin}: p ${fmt(c.pMargin, 2)}${c.pMarginAdjusted === undefined ? "" : `, adjusted ${fmt(c.pMarginAdjusted, 2)}`}`;
      console.log(`  ${c.name.padEnd(40)} ${fmt(c.before)} → ${fmt(c.after)}  ${Verdict[c.verdict].toLowerCase()}${interval}${p}${pm}`);
    }
  }
  if (!failOn.length) return;
  for (const name of reply.worse) console.error(`${label}: ${name} got significantly worse`);
  if (reply.decision === Decision.WORSE) process.exitCode = WORSE_STATUS;
  else if (reply.decision === Decision.NOT_ENOUGH_DATA) {
    console.error(`${label}: ${reply.summary}${opts["allow-empty"] ? "" : ` (exit ${EMPTY_STATUS}; --allow-empty passes)`}`);
    if (!opts["allow-empty"]) process.exitCode = EMPTY_STATUS;
  }
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
    show(await client.getProfile(arg, opts.window ?? "all"));
  } else if (command === "watch" && arg) {
    for await (const profile of client.watchProfile(arg, opts.window ?? "all")) show(profile);
  } else if (command === "compare" && arg && positionals.length <= 3) {
    await compare(arg, other);
  } else if (command === "models") {
    for (const m of await client.listModels()) console.log(`${m.model}\t${m.acceptedPredictions}`);
  } else if (command === "delete-model" && arg) {
    removed(`model ${arg}`, await client.deleteModel(arg, { tenant: opts.tenant }));
  } else if (command === "delete-tenant" && arg) {
    const reply = await client.deleteTenantData(arg);
    removed(`tenant ${arg} (${reply.models.length} ${reply.models.length === 1 ? "model" : "models"})`, reply);
  } else {
    console.error("usage: holistic-node submit FILE | profile MODEL | watch MODEL | models | delete-model MODEL --yes"
      + " | delete-tenant TENANT --yes | compare A [B] [--fail-on] [--margin] [--multiplicity] [--allow-empty]"
      + "  [--target] [--token] [--window] [--json] [--tenant]");
    process.exitCode = 2;
  }
} catch (err) {
  console.error(`error: ${err.message}`);
  process.exitCode = 2;
} finally {
  client.close();
}
