export { RingbufError } from './errors.ts';
