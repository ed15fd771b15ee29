export { codeOf, type ErrorShape, EvtraceError, type EvtraceErrorOptions } from './error.ts';
export { formatLocation, type Location, located } from './location.ts';
export { errnoText, errorText } from './system.ts';
