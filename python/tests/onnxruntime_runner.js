// SPDX-License-Identifier: Apache-2.0
// Runs single-node ONNX models in ONNX Runtime (the npm package onnxruntime-node, its CPU
// execution provider) for the agreement test: test_onnxruntime_agreement.py writes the models,
// their inputs as raw little-endian files and a manifest; this script runs each case and writes
// the output tensor's raw bytes next to them.
//
//   node onnxruntime_runner.js MANIFEST.json
//
// The manifest: {"cases": [{"model": "c0.onnx", "optimization": "all" | "disabled",
//   "inputs": [{"name": "x", "file": "c0.x", "type": "uint8", "dims": [1, 2, 3, 3]}],
//   "output": "y", "result": "c0.y"}]}
// (file names relative to the manifest). A case ORT refuses gets "<result>.error" holding the
// message instead. The module is found through NODE_PATH (the folder holding onnxruntime-node).
// Prints the ORT version on its first line.
'use strict';

const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');

const kinds = {uint8: Uint8Array, int8: Int8Array, int32: Int32Array, float32: Float32Array};

async function main() {
  const manifestPath = process.argv[2];
  const dir = path.dirname(manifestPath);
  const manifest = JSON.parse(fs.readFileSync(manifestPath, 'utf8'));
  console.log(`onnxruntime-node ${ort.env.versions.common} ${process.version}`);
  for (const c of manifest.cases) {
    const result = path.join(dir, c.result);
    try {
      const session = await ort.InferenceSession.create(path.join(dir, c.model), {
        executionProviders: ['cpu'],
        graphOptimizationLevel: c.optimization || 'all',
        intraOpNumThreads: 1,
        interOpNumThreads: 1,
        logSeverityLevel: 4,  // a refused case is reported through its .error file
      });
      const feeds = {};
      for (const input of c.inputs) {
        const bytes = fs.readFileSync(path.join(dir, input.file));
        const Kind = kinds[input.type];
        const data = new Kind(bytes.buffer, bytes.byteOffset, bytes.byteLength / Kind.BYTES_PER_ELEMENT);
        feeds[input.name] = new ort.Tensor(input.type, data, input.dims);
      }
      const outputs = await session.run(feeds);
      const y = outputs[c.output];
      fs.writeFileSync(result, Buffer.from(y.data.buffer, y.data.byteOffset, y.data.byteLength));
      await session.release();
    } catch (e) {
      fs.writeFileSync(result + '.error', String(e && e.message ? e.message : e));
    }
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
