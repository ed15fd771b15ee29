/**
 * The WebAssembly module that walks a perf.data's records and decodes its kmem samples (assembly/perf-data.ts, built
 * to perf-data.wasm beside this module's build), instantiated fresh for each file: its exports, typed.
 */
import { existsSync, readFileSync } from 'node:fs';

/** What this module uses of the WebAssembly API (Node's global; the package compiles without the DOM's types). */
declare const WebAssembly: {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: object) => { readonly exports: object };
};

/** An exported global's value. */
interface Global {
  readonly value: number;
}

/** The module's exports (see assembly/perf-data.ts for what each does). */
export interface PerfDataWasm {
  readonly memory: { readonly buffer: ArrayBuffer };
  configureLayout(id: number, time: number, cpu: number, idBase: bigint): void;
  configureSample(event: number, fixed: number, raw: number): void;
  configureId(id: bigint, event: number): void;
  configureEvent(
    event: number,
    code: number,
    site: number,
    ptr: number,
    req: number,
    alloc: number,
    name: number,
    needs: number,
  ): void;
  configureAnalysis(intervalNs: number, strictKfree: boolean, examplesPerKind: number): void;
  reserve(bytes: number): number;
  start(): void;
  walk(at: number, length: number): number;
  end(): void;
  analyseDeliverable(): number;
  sites(): number;
  siteAddresses(): number;
  names(): number;
  nameStart(id: number): number;
  nameLength(id: number): number;
  issueCount(kind: number): number;
  exampleAt(): number;
  pointers(): number;
  pointerKeys(): number;
  pointerRows(): number;
  pointerStates(): number;
  allocSites(): number;
  allocSiteKeys(): number;
  siteColumn(column: number): number;
  bucketAt(): number;
  slots(): number;
  sparseTime(): number;
  readonly lost: Global;
  readonly DECLINED: Global;
  readonly declined: Global;
  readonly events: Global;
  readonly allocs: Global;
  readonly frees: Global;
  readonly failed: Global;
  readonly reqSum: Global;
  readonly allocSum: Global;
  readonly freedSum: Global;
  readonly crossCpu: Global;
  readonly first: Global;
  readonly last: Global;
  readonly exampleCount: Global;
}

let compiled: object | undefined;

/** A new instance of the module (compiled once per process). */
export function perfDataWasm(): PerfDataWasm {
  compiled ??= new WebAssembly.Module(perfDataWasmBytes());
  const instance = new WebAssembly.Instance(compiled, {
    env: {
      abort: (_message: number, _file: number, line: number, column: number) => {
        throw new Error(`perf-data.wasm aborted at line ${line}, column ${column}`);
      },
    },
  });
  return instance.exports as unknown as PerfDataWasm;
}

/**
 * The module's bytes: beside the built module, or in the package's build for the sources under test (the standalone
 * evtrace embeds them, and its build replaces this call: apps/agent/scripts/standalone.ts).
 */
function perfDataWasmBytes(): Uint8Array {
  const beside = new URL('./perf-data.wasm', import.meta.url);
  return readFileSync(existsSync(beside) ? beside : new URL('../dist/perf-data.wasm', import.meta.url));
}
