/**
 * The read loop's record count, in WebAssembly (count-pages.wat): pages are read straight into the module's memory
 * and counted there. The same walk in JavaScript (`countPages`, pages.ts) costs more to compile than to run in a
 * recording (V8's optimizing compilers, `--trace-opt` shows them), where this module compiles at once
 * (packages/tracefs/src/record.bench.ts prints a recording's CPU).
 */
import type { PageLayout } from '@evtrace/trace-format';
import { COUNT_PAGES_WASM } from './count-pages.wasm.ts';
import type { PagesCount } from './pages.ts';

/** The few WebAssembly APIs used here (the project's TypeScript libraries have no WebAssembly types). */
interface Wasm {
  Memory: new (descriptor: { initial: number }) => { buffer: ArrayBuffer };
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: object) => { exports: unknown };
}
const wasm = (globalThis as unknown as { WebAssembly: Wasm }).WebAssembly;

interface CountExports {
  count(
    start: number,
    pages: number,
    pageSize: number,
    commitOffset: number,
    dataOffset: number,
    length: number,
    table: number,
  ): void;
  records: { value: number };
  dataBytes: { value: number };
  missedPages: { value: number };
}

/** Distinct `common_type` values: a u16. */
const TYPES = 65536;
const WASM_PAGE = 65536;

let compiled: object | undefined;

/** A batch buffer and counters in one WebAssembly memory, and the walk that fills the counters. */
export class PageCounter {
  /** Room for `batchPages` sub-buffers: read into it, then {@link count}. */
  readonly pages: Buffer;
  /** Records by `common_type`, summed over every batch counted. */
  readonly byType: Float64Array;
  readonly #layout: PageLayout;
  readonly #exports: CountExports;
  readonly #table: number;

  constructor(layout: PageLayout, batchPages: number) {
    this.#layout = layout;
    const bytes = layout.pageSize * batchPages;
    // The table follows the pages; a page size is a multiple of 8, so the f64 counters are aligned.
    this.#table = bytes;
    const memory = new wasm.Memory({ initial: Math.ceil((bytes + TYPES * 8) / WASM_PAGE) });
    compiled ??= new wasm.Module(Buffer.from(COUNT_PAGES_WASM, 'base64'));
    this.#exports = new wasm.Instance(compiled, { env: { memory } }).exports as CountExports;
    // The memory never grows, so these views stay valid.
    this.pages = Buffer.from(memory.buffer, 0, bytes);
    this.byType = new Float64Array(memory.buffer, this.#table, TYPES);
  }

  /**
   * Counts the first `pages` sub-buffers of {@link pages}: their records into {@link byType}, and into `out` the
   * records, the bytes of record data and the pages with the kernel's missed-events flag. A malformed page counts up
   * to its first bad header, as `countPages` does.
   */
  count(pages: number, out: PagesCount): PagesCount {
    const l = this.#layout;
    const e = this.#exports;
    e.count(0, pages, l.pageSize, l.commitOffset, l.dataOffset, this.pages.length, this.#table);
    out.records = e.records.value;
    out.dataBytes = e.dataBytes.value;
    out.missedPages = e.missedPages.value;
    return out;
  }
}
