/**
 * Filter evaluation speed over encoded kmalloc records, each figure beside its peer in the same run:
 *   compiled record predicate  vs  the tree interpreter of the same expression (generic field reads);
 *   compiled record predicate  vs  decoding each record (trace-format) and evaluating the decoded event.
 * Run: node src/filters.bench.ts
 */
import { readFileSync } from 'node:fs';
import { consume, measure, printComparisons } from '@evtrace/bench';
import { compileRecordDecoder, parseFormatFile, type TraceEvent } from '@evtrace/trace-format';
import { compileFilter, compileRecordFilter } from './compile.ts';
import { parseFilter } from './parser.ts';
import { testNumber } from './semantics.ts';
import { evaluateTree } from './tree.ts';

const url = new URL('../fixtures/events/kmem/kmalloc/format', import.meta.url);
const kmalloc = parseFormatFile(readFileSync(url, 'utf8'), { system: 'kmem' });
const fields = new Map(kmalloc.ftrace!.fields.map((f) => [f.name, f]));

// 4096 records of 56 bytes with varied sizes and nodes, like a kmalloc stream.
const RECORD = 56;
const COUNT = 4096;
const buffer = Buffer.alloc(RECORD * COUNT);
const view = new DataView(buffer.buffer, buffer.byteOffset, buffer.byteLength);
let seed = 12345;
const rand = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) >>> 8;
for (let i = 0; i < COUNT; i++) {
  const o = i * RECORD;
  view.setUint16(o, 658, true);
  view.setInt32(o + 4, 1000 + (rand() % 50), true);
  view.setBigUint64(o + 8, 0xffffffff81000000n + BigInt(rand() % 65536), true);
  view.setBigUint64(o + 24, BigInt(8 << (rand() % 10)), true);
  view.setBigUint64(o + 32, BigInt(16 << (rand() % 10)), true);
  view.setBigUint64(o + 40, 0xcc0n, true);
  view.setInt32(o + 48, rand() % 4 === 0 ? 1 : 0, true);
}

const EXPR = 'bytes_req > 256 && node == 0';
const parsed = parseFilter(EXPR, kmalloc);
const compiled = compileRecordFilter(parsed, kmalloc);
const onEvent = compileFilter(parsed, kmalloc);
const decode = compileRecordDecoder(kmalloc);

/** The peer interpreter: walks the tree, reading each field generically (DataView + BigInt) per predicate. */
function interpret(o: number): boolean {
  return evaluateTree(parsed.root, (i) => {
    const pred = parsed.predicates[i]!;
    const f = fields.get(pred.field.name)!;
    const raw =
      f.size === 8
        ? view.getBigUint64(o + f.offset, true)
        : BigInt(f.size === 4 ? view.getUint32(o + f.offset, true) : view.getUint16(o + f.offset, true));
    return testNumber(pred, raw);
  });
}

function countCompiled(): number {
  let n = 0;
  for (let o = 0; o < buffer.length; o += RECORD) if (compiled(view, o, RECORD, 0)) n++;
  return n;
}
function countInterpreted(): number {
  let n = 0;
  for (let o = 0; o < buffer.length; o += RECORD) if (interpret(o)) n++;
  return n;
}
function countDecoded(): number {
  let n = 0;
  for (let o = 0; o < buffer.length; o += RECORD) {
    const d = decode(buffer, view, o, RECORD);
    const event: TraceEvent = { tsNs: 0n, cpu: 0, eventClass: kmalloc, fields: d.fields, scopes: { common: d.common } };
    if (onEvent(event)) n++;
  }
  return n;
}

const expected = countCompiled();
if (countInterpreted() !== expected || countDecoded() !== expected) throw new Error('evaluators disagree');

const ours = measure(`compiled record predicate: ${EXPR}`, () => consume(countCompiled()), { opsPerCall: COUNT });
printComparisons(`filter evaluation over ${COUNT} encoded kmalloc records (${expected} match)`, [
  {
    case: 'two-comparison numeric filter',
    ours,
    peer: measure('tree interpreter', () => consume(countInterpreted()), { opsPerCall: COUNT }),
    target: '>= 50 M/s (<= 20 ns)',
  },
  {
    case: 'two-comparison numeric filter',
    ours,
    peer: measure('decode record + evaluate event', () => consume(countDecoded()), { opsPerCall: COUNT }),
    target: '>= 50 M/s (<= 20 ns)',
  },
]);
