/**
 * Test support: the JSON Schemas the packages publish (draft 2020-12), compiled once by ajv, so tests can hold the
 * CLI's real output to its contract.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import { expect } from 'vitest';

const require = createRequire(import.meta.url);
const ajv = new Ajv2020({ strict: true });
const compiled = new Map<string, ValidateFunction>();

/** The validator of a published schema, by its package export (`@evtrace/trace-format/schemas/event.json`). */
export function schema(specifier: string): ValidateFunction {
  let v = compiled.get(specifier);
  if (v === undefined) {
    // A schema may refer to its package's other schemas by relative $ref: all of them are known to ajv first.
    const path = require.resolve(specifier);
    for (const f of readdirSync(dirname(path)).filter((n) => n.endsWith('.json'))) {
      const other = JSON.parse(readFileSync(join(dirname(path), f), 'utf8')) as { $id: string };
      if (ajv.getSchema(other.$id) === undefined) ajv.addSchema(other);
    }
    v = ajv.getSchema((JSON.parse(readFileSync(path, 'utf8')) as { $id: string }).$id)!;
    compiled.set(specifier, v);
  }
  return v;
}

/** Asserts that `value` is valid against the published schema, naming the first problems when it is not. */
export function expectValid(specifier: string, value: unknown, what = specifier): void {
  const validate = schema(specifier);
  const ok = validate(value);
  expect(ok, `${what}: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(value).slice(0, 400)}`).toBe(true);
}

const generated = new WeakMap<object, ValidateFunction>();

/**
 * Asserts that `value` is valid against a schema built in the test (trace-format's `eventClassSchema`), which may
 * refer to the published schemas of `uses` by their $id.
 */
export function expectValidAgainst(built: object, value: unknown, uses: string, what = ''): void {
  schema(uses);
  let validate = generated.get(built);
  if (validate === undefined) generated.set(built, (validate = ajv.compile(built)));
  const ok = validate(value);
  expect(ok, `${what}: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(value).slice(0, 400)}`).toBe(true);
}
