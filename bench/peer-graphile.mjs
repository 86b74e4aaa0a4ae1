// The graphile-worker side of bench/peer (run by that script with the Node it installs).
//
//   node peer-graphile.mjs drain   --jobs N --concurrency K --local-queue S --batch-delay MS
//   node peer-graphile.mjs latency --rate R --latency-secs T --concurrency K --local-queue S --batch-delay MS
//   node peer-graphile.mjs round   --jobs N --latency-secs T ...   (drain, then latency at 200/s
//                                                                   and at half the drained rate)
//
// DATABASE_URL names the private cluster's database; PEER_CACHE is the folder whose
// node_modules holds graphile-worker. Each mode starts from an empty graphile_worker
// schema and prints one JSON line on stdout; graphile's own logs go to stderr.
//
// drain: N no-op jobs are queued first (in bulk, not timed), then a worker pool with
// K concurrent jobs drains them. The clock starts when the pool is asked to run and
// stops when the jobs table is empty: a completion counts once PostgreSQL has
// committed it (completeJobBatchDelay holds completions back before that commit).
//
// latency: the pool waits idle; jobs are added at a steady R/s for T s, and each one's
// enqueue→start time is the time from addJob's reply (the job committed) to the task
// starting in the pool.
import { readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { performance } from "node:perf_hooks";

const require = createRequire(`${process.env.PEER_CACHE}/package.json`);
const { run, makeWorkerUtils, Logger } = require("graphile-worker");
const { Client } = require("pg");

// CPU seconds (user + system) of the cluster: the postmaster, its live children and the
// children it has reaped (cutime/cstime); 0 without PG_PID. Plus this Node process.
function clusterCpuSecs() {
  const pm = process.env.PG_PID;
  if (!pm) return 0;
  const hz = 100;
  const fields = (pid) => {
    try {
      const text = readFileSync(`/proc/${pid}/stat`, "utf8");
      return text.slice(text.lastIndexOf(")") + 2).split(" ");
    } catch {
      return null;
    }
  };
  const own = fields(pm);
  if (!own) return 0;
  let ticks = Number(own[11]) + Number(own[12]) + Number(own[13]) + Number(own[14]);
  for (const pid of readdirSync("/proc")) {
    if (!/^[0-9]+$/.test(pid)) continue;
    const f = fields(pid);
    if (f && f[1] === pm) ticks += Number(f[11]) + Number(f[12]);
  }
  return ticks / hz;
}

function nodeCpuSecs() {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
}

function flag(name, fallback) {
  const i = process.argv.indexOf(name);
  return i >= 0 && i + 1 < process.argv.length ? Number(process.argv[i + 1]) : fallback;
}

const mode = process.argv[2];
const connectionString = process.env.DATABASE_URL;
const concurrency = flag("--concurrency", 16);
const localQueueSize = flag("--local-queue", 500);
const batchDelay = flag("--batch-delay", 250);
const settings = {
  concurrentJobs: concurrency,
  maxPoolSize: Math.max(10, concurrency + 2),
  localQueue: { size: localQueueSize },
  completeJobBatchDelay: batchDelay,
};

// Warnings and errors only: info lines per job would cost the pool time.
const logger = new Logger(() => (level, message) => {
  if (level === "error" || level === "warning") process.stderr.write(`graphile ${level}: ${message}\n`);
});

async function sql(text, params = []) {
  const c = new Client({ connectionString });
  await c.connect();
  try {
    return await c.query(text, params);
  } finally {
    await c.end();
  }
}

async function freshSchema() {
  await sql("drop schema if exists graphile_worker cascade");
  const utils = await makeWorkerUtils({ connectionString, logger });
  await utils.migrate();
  return utils;
}

function startPool(taskList, events) {
  return run({
    connectionString,
    concurrency,
    noHandleSignals: true,
    pollInterval: 2000,
    logger,
    taskList,
    events,
    preset: { worker: { maxPoolSize: settings.maxPoolSize, localQueue: settings.localQueue, completeJobBatchDelay: batchDelay } },
  });
}

async function drain(n) {
  const utils = await freshSchema();
  const chunk = 5000;
  for (let i = 0; i < n; i += chunk) {
    const specs = [];
    for (let j = i; j < Math.min(n, i + chunk); j++) specs.push({ identifier: "noop", payload: { i: j } });
    await utils.addJobs(specs);
  }
  await utils.release();
  let done = 0;
  let lastSuccess = 0;
  let allStarted;
  const allDone = new Promise((resolve) => (allStarted = resolve));
  const taskList = {
    noop: async () => {
      done += 1;
      if (done === n) {
        lastSuccess = performance.now();
        allStarted();
      }
    },
  };
  const [pg0, node0] = [clusterCpuSecs(), nodeCpuSecs()];
  const start = performance.now();
  const runner = await startPool(taskList);
  await allDone;
  // Completions are committed in batches: wait for the last one to be durable.
  const c = new Client({ connectionString });
  await c.connect();
  for (;;) {
    const r = await c.query("select count(*)::int as n from graphile_worker._private_jobs");
    if (r.rows[0].n === 0) break;
    await new Promise((res) => setTimeout(res, 5));
  }
  const end = performance.now();
  const cpu_us_per_job = { postgres: ((clusterCpuSecs() - pg0) * 1e6) / n, node: ((nodeCpuSecs() - node0) * 1e6) / n };
  await c.end();
  await runner.stop();
  const seconds = (end - start) / 1000;
  return { jobs: n, seconds, jobs_per_s: n / seconds, handler_done_s: (lastSuccess - start) / 1000, cpu_us_per_job };
}

function percentile(sorted, p) {
  if (sorted.length === 0) return NaN;
  return sorted[Math.round((sorted.length - 1) * p)];
}

async function latency(rate, secs) {
  const total = Math.max(50, Math.round(rate * secs));
  const utils = await freshSchema();
  const committed = new Map();
  const started = new Map();
  let finished;
  const allSeen = new Promise((resolve) => (finished = resolve));
  const taskList = {
    noop: async (_payload, helpers) => {
      started.set(String(helpers.job.id), performance.now());
      if (started.size === total) finished();
    },
  };
  const runner = await startPool(taskList);
  await new Promise((res) => setTimeout(res, 500));
  // A steady rate: every millisecond, add the jobs that are due by now.
  const t0 = performance.now();
  let sent = 0;
  const adds = [];
  while (sent < total) {
    const due = Math.min(total, Math.floor(((performance.now() - t0) / 1000) * rate) + 1);
    for (; sent < due; sent++) {
      adds.push(utils.addJob("noop", {}).then((job) => committed.set(String(job.id), performance.now())));
    }
    await new Promise((res) => setTimeout(res, 1));
  }
  const sentFor = (performance.now() - t0) / 1000;
  await Promise.all(adds);
  await Promise.race([allSeen, new Promise((res) => setTimeout(res, 30000))]);
  await runner.stop();
  await utils.release();
  const lat = [];
  for (const [id, at] of committed) {
    const got = started.get(id);
    if (got !== undefined) lat.push(Math.max(0, got - at));
  }
  lat.sort((a, b) => a - b);
  return { rate, achieved_rate: total / sentFor, jobs: total, measured: lat.length, p50_ms: percentile(lat, 0.5), p99_ms: percentile(lat, 0.99) };
}

const secs = flag("--latency-secs", 3);
const modes = {
  drain: async () => ({ ...(await drain(flag("--jobs", 50000))) }),
  latency: async () => ({ lat: await latency(flag("--rate", 200), secs) }),
  round: async () => {
    const d = await drain(flag("--jobs", 50000));
    const lat200 = await latency(200, secs);
    const lathalf = await latency(Math.max(1, Math.round(d.jobs_per_s / 2)), secs);
    return { ...d, lat200, lathalf };
  },
};
if (!modes[mode]) {
  process.stderr.write("usage: peer-graphile.mjs drain|latency [--jobs N] [--rate R] [--latency-secs T] [--concurrency K] [--local-queue S] [--batch-delay MS]\n");
  process.exit(2);
}
modes[mode]().then((out) => console.log(JSON.stringify({ side: "graphile", mode, ...out, settings }))).catch((e) => {
  process.stderr.write(`peer-graphile: ${e && e.stack ? e.stack : e}\n`);
  process.exit(1);
});
