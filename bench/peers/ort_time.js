#!/usr/bin/env node
// Times an ONNX model in ONNX Runtime (CPU, MLAS kernels and ORT's own graph fusions) and writes
// its outputs as .npy, so the benchmarks compare fusetune with ORT on the same file and inputs.
//
//   node bench/peers/ort_time.js --model m.onnx --inputs DIR --threads N [--outputs DIR]
//        [--seconds 2] [--warmup 10] [--min-calls 20] [--ort-dir /work/ort] [--profile PREFIX]
//
// Inputs are DIR/<graph input name>.npy (float32, C order), as `fusetune run --inputs` takes them.
// Outputs go to OUT/output_<i>.npy, in the graph's output order, as `fusetune run --outputs` writes.
// The session runs as the issue asks: graphOptimizationLevel 'all', intraOpNumThreads N,
// interOpNumThreads 1, sequential execution. Prints one JSON line:
//   {"us": median, "calls": n, "min_us": ..., "ort_version": "..."}
// --profile PREFIX turns on ORT's own profiler (enableProfiling): every node of every call, warmup
// included, goes to PREFIX_<date>.json (Chrome trace format), named in the JSON line as "profile".
// The profiler adds its own cost to "us": bench/peers/ort_profile.py reads the trace per node.
//
// onnxruntime-node is never part of the repository: install it outside it with
//   npm install --prefix /work/ort --ignore-scripts onnxruntime-node
// and point --ort-dir (or $ORT_NODE_DIR) at that prefix.
'use strict';

const fs = require('fs');
const path = require('path');

function parseArgs(argv) {
  const args = {
    seconds: 2, warmup: 10, minCalls: 20, threads: 1,
    ortDir: process.env.ORT_NODE_DIR || '/work/ort',
  };
  const names = {
    '--model': 'model', '--inputs': 'inputs', '--outputs': 'outputs', '--threads': 'threads',
    '--seconds': 'seconds', '--warmup': 'warmup', '--min-calls': 'minCalls', '--ort-dir': 'ortDir',
    '--profile': 'profile',
  };
  for (let i = 0; i < argv.length; i += 2) {
    const key = names[argv[i]];
    if (!key || i + 1 >= argv.length) usage(`unknown or incomplete argument '${argv[i]}'`);
    args[key] = argv[i + 1];
  }
  for (const k of ['threads', 'seconds', 'warmup', 'minCalls']) {
    args[k] = Number(args[k]);
    if (!Number.isFinite(args[k]) || args[k] < 0) usage(`--${k} must be a number >= 0`);
  }
  if (!args.model || !args.inputs) usage('--model and --inputs are required');
  return args;
}

function usage(message) {
  process.stderr.write(`ort_time.js: error: ${message}\n` +
      'usage: node ort_time.js --model M.onnx --inputs DIR --threads N [--outputs DIR] ' +
      '[--seconds S] [--warmup K] [--min-calls C] [--ort-dir PREFIX] [--profile PREFIX]\n');
  process.exit(2);
}

// .npy reader/writer for the dtypes the benchmarks use (little-endian, C order).
const NPY_TYPES = {
  '<f4': ['float32', Float32Array], '<i8': ['int64', BigInt64Array],
  '<i4': ['int32', Int32Array], '|b1': ['bool', Uint8Array],
};

function readNpy(file) {
  const buf = fs.readFileSync(file);
  if (buf.readUInt32BE(0) !== 0x934e554d || buf.toString('latin1', 4, 6) !== 'PY') {
    throw new Error(`${file}: not a .npy file`);
  }
  const major = buf[6];
  const headerLen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const start = major === 1 ? 10 : 12;
  const header = buf.toString('latin1', start, start + headerLen);
  const descr = /'descr':\s*'([^']+)'/.exec(header);
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header);
  if (!descr || !shape || /'fortran_order':\s*True/.test(header)) {
    throw new Error(`${file}: unsupported .npy header ${header.trim()}`);
  }
  const type = NPY_TYPES[descr[1]];
  if (!type) throw new Error(`${file}: unsupported dtype ${descr[1]}`);
  const dims = shape[1].split(',').map((s) => s.trim()).filter((s) => s).map(Number);
  const count = dims.reduce((a, b) => a * b, 1);
  const offset = start + headerLen;
  const bytes = buf.subarray(offset, offset + count * type[1].BYTES_PER_ELEMENT);
  // Copy into an aligned buffer: typed arrays need their element alignment.
  const data = new type[1](count);
  new Uint8Array(data.buffer).set(bytes);
  return { type: type[0], data, dims };
}

function writeNpy(file, tensor) {
  const descr = Object.keys(NPY_TYPES).find((k) => NPY_TYPES[k][0] === tensor.type);
  if (!descr) throw new Error(`cannot write dtype ${tensor.type}`);
  const dims = tensor.dims.map(Number);
  const shape = dims.length === 1 ? `(${dims[0]},)` : `(${dims.join(', ')})`;
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shape}, }`;
  header += ' '.repeat(63 - ((10 + header.length) % 64)) + '\n';  // 64-byte aligned data
  const pre = Buffer.alloc(10);
  pre.writeUInt32BE(0x934e554d, 0);
  pre.write('PY', 4, 'latin1');
  pre[6] = 1;
  pre[7] = 0;
  pre.writeUInt16LE(header.length, 8);
  const data = tensor.data;
  fs.writeFileSync(file, Buffer.concat([pre, Buffer.from(header, 'latin1'),
    Buffer.from(data.buffer, data.byteOffset, data.byteLength)]));
}

function median(values) {
  const s = [...values].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  let ort;
  try {
    ort = require(path.join(path.resolve(args.ortDir), 'node_modules', 'onnxruntime-node'));
  } catch (e) {
    process.stderr.write(`ort_time.js: error: cannot load onnxruntime-node from ${args.ortDir} ` +
        `(npm install --prefix ${args.ortDir} --ignore-scripts onnxruntime-node): ${e.message}\n`);
    process.exit(2);
  }
  const options = {
    executionProviders: ['cpu'],
    graphOptimizationLevel: 'all',
    intraOpNumThreads: args.threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
  };
  if (args.profile) {
    options.enableProfiling = true;
    options.profileFilePrefix = path.resolve(args.profile);
    fs.mkdirSync(path.dirname(options.profileFilePrefix), { recursive: true });
  }
  const startedAt = Date.now();
  const session = await ort.InferenceSession.create(args.model, options);
  const feeds = {};
  for (const name of session.inputNames) {
    const file = path.join(args.inputs, `${name}.npy`);
    if (!fs.existsSync(file)) {
      process.stderr.write(`ort_time.js: error: no input file ${file} for graph input '${name}'\n`);
      process.exit(2);
    }
    const t = readNpy(file);
    feeds[name] = new ort.Tensor(t.type, t.data, t.dims);
  }

  let outputs;
  for (let i = 0; i < args.warmup || outputs === undefined; ++i) outputs = await session.run(feeds);
  const times = [];
  const deadline = performance.now() + args.seconds * 1e3;
  while (performance.now() < deadline || times.length < args.minCalls) {
    const t0 = performance.now();
    await session.run(feeds);
    times.push((performance.now() - t0) * 1e3);
  }

  if (args.outputs) {
    fs.mkdirSync(args.outputs, { recursive: true });
    session.outputNames.forEach((name, i) => {
      writeNpy(path.join(args.outputs, `output_${i}.npy`), outputs[name]);
    });
  }
  let profile;
  if (args.profile) {
    // endProfiling writes the trace and does not say where: the newest PREFIX_*.json since start.
    session.endProfiling();
    const dir = path.dirname(options.profileFilePrefix);
    const base = path.basename(options.profileFilePrefix) + '_';
    profile = fs.readdirSync(dir)
                  .filter((f) => f.startsWith(base) && f.endsWith('.json'))
                  .map((f) => path.join(dir, f))
                  .filter((f) => fs.statSync(f).mtimeMs >= startedAt)
                  .sort((a, b) => fs.statSync(b).mtimeMs - fs.statSync(a).mtimeMs)[0];
  }
  const version = ort.env && ort.env.versions ? ort.env.versions.node || ort.env.versions.common :
                                                undefined;
  process.stdout.write(JSON.stringify({
    us: median(times), min_us: Math.min(...times), calls: times.length, threads: args.threads,
    ort_version: version, profile,
  }) + '\n');
  if (session.release) await session.release();
}

main().catch((e) => {
  process.stderr.write(`ort_time.js: error: ${e.stack || e}\n`);
  process.exit(1);
});
