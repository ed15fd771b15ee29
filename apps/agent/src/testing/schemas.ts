/**
 * Test support: the JSON Schemas the packages publish (draft 2020-12), compiled once by ajv, so tests can hold the
 * CLI's real output to its contract.
 */
import { createRequire } from 'node:module';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import { expect } from 'vitest';

const require = createRequire(import.meta.url);
const ajv = new Ajv2020({ strict: true });
const compiled = new Map<string, ValidateFunction>();

/** The validator of a published schema, by its package export (`@evtrace/trace-format/schemas/event.json`). */
export function schema(specifier: string): ValidateFunction {
  let v = compiled.get(specifier);
  if (v === undefined) {
    v = ajv.compile(require(specifier));
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
