/**
 * Perfetto's trace schema, loaded with protobufjs from the `.proto` files this package ships in `protos/` (Perfetto's
 * published files, trimmed to what evtrace writes; see protos/README.md for their origin).
 */
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type Protobuf from 'protobufjs';

/** The files, relative to the package's root, in the form their own imports name each other. */
const FILES = [
  'protos/perfetto/trace/trace.proto',
  'protos/perfetto/trace/trace_packet.proto',
  'protos/perfetto/trace/ps/process_tree.proto',
  'protos/perfetto/trace/ftrace/ftrace_event_bundle.proto',
  'protos/perfetto/trace/ftrace/ftrace_event.proto',
  'protos/perfetto/trace/ftrace/generic.proto',
  'protos/perfetto/trace/ftrace/print.proto',
  'protos/perfetto/trace/ftrace/sched.proto',
  'protos/perfetto/trace/ftrace/task.proto',
] as const;

/** The schema's root folder: the package root, found upwards from this module (src/output in tests, dist built). */
export function perfettoProtoRoot(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  for (let dir = here, up = 0; up < 4; dir = dirname(dir), up++) {
    if (existsSync(join(dir, FILES[0]))) return dir;
  }
  throw new Error(`Perfetto's .proto files are missing: no ${FILES[0]} above ${here}`);
}

/** The message types evtrace writes and its tests decode. */
export interface PerfettoSchema {
  readonly Trace: Protobuf.Type;
  readonly TracePacket: Protobuf.Type;
}

let schema: PerfettoSchema | undefined;

/** Perfetto's schema, parsed once (field names as the .proto files spell them). */
export function perfettoSchema(): PerfettoSchema {
  if (schema !== undefined) return schema;
  // Loaded on first use: every command imports this package and few write Perfetto, and protobufjs takes about as
  // long to load as the rest of the package. The standalone build bundles it (apps/agent/scripts/standalone.ts).
  const protobuf = createRequire(import.meta.url)('protobufjs') as typeof Protobuf;
  const root = new protobuf.Root();
  const dir = perfettoProtoRoot();
  for (const file of FILES) protobuf.parse(readFileSync(join(dir, file), 'utf8'), root, { keepCase: true });
  root.resolveAll();
  schema = {
    Trace: root.lookupType('perfetto.protos.Trace'),
    TracePacket: root.lookupType('perfetto.protos.TracePacket'),
  };
  return schema;
}
