/**
 * Parse + print of a generated config.pbtxt of about 10,000 lines, and of
 * one ten times larger, to show the parser is linear. Prints figures only.
 * Run: npx tsx test/bench/pbtxt.ts
 */
import { parsePbtxt } from '../../src/triton/pbtxt-parser.js';
import { printPbtxt } from '../../src/triton/pbtxt-printer.js';
import type { ModelConfig } from '../../src/triton/model-config.js';

function generate(inputs: number): string {
  const config: ModelConfig = {
    name: 'bench',
    backend: 'poplar',
    max_batch_size: 32,
    input: Array.from({ length: inputs }, (_, i) => ({
      name: `input_${i}`,
      data_type: 'TYPE_FP16',
      dims: [3, 224, 224],
      reshape: { shape: [150528] },
    })),
    output: Array.from({ length: inputs }, (_, i) => ({
      name: `output_${i}`,
      data_type: 'TYPE_FP32',
      dims: [1000],
      label_filename: `labels_${i}.txt`,
    })),
    instance_group: [{ kind: 'KIND_CPU', count: 2 }],
    parameters: Array.from({ length: inputs }, (_, i) => ({ key: `key_${i}`, value: { string_value: `value ${i} with "quotes"` } })),
  };
  return printPbtxt(config);
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? NaN;
}

function time(text: string, runs: number): number {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = process.hrtime.bigint();
    printPbtxt(parsePbtxt(text).message);
    times.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  return median(times);
}

const small = generate(600);
const large = generate(6000);
const lines = (t: string): number => t.split('\n').length - 1;
time(small, 20); // warm up the JIT
const tSmall = time(small, 30);
const tLarge = time(large, 10);
console.log(`parse + print, ${lines(small)} lines (${small.length} bytes): ${tSmall.toFixed(1)} ms (target < 50 ms)`);
console.log(
  `parse + print, ${lines(large)} lines (${large.length} bytes): ${tLarge.toFixed(1)} ms, ${(tLarge / tSmall).toFixed(1)}x the time for ${(large.length / small.length).toFixed(1)}x the input`,
);
