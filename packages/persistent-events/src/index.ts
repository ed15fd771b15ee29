export {
  type BootBuffer,
  type BootDetection,
  type BootInstanceParam,
  detectBootBuffers,
  parseBootParams,
  type ReservedMemory,
} from './boot.ts';
export { PersistentError, type PersistentErrorCode } from './errors.ts';
export { Follower, type PollResult } from './follow.ts';
export {
  bootBuffers,
  createKernelBuffer,
  deleteKernelBuffer,
  KernelBuffer,
  type KernelCreateOptions,
  type KernelOptions,
  listKernelBuffers,
  openKernelBuffer,
} from './kernel.ts';
export { KernelBufferSource } from './kernel-source.ts';
export {
  deleteBuffer,
  type ListOptions,
  listPersistent,
  type PersistentListing,
  type UnreadableBuffer,
} from './list.ts';
export type { BufferMeta, EventClass } from './meta.ts';
export { KERNEL_PREFIX, kernelInstanceName, MAX_NAME_DEPTH, MAX_NAME_LENGTH, parseName } from './name.ts';
export type { Mappers } from './procmaps.ts';
export { isPersistentSource, type PersistentSource, type PersistentTarget } from './source.ts';
export {
  BUFFER_SUFFIX,
  type BufferInfo,
  bufferDir,
  bufferPath,
  type CreateBufferOptions,
  DEFAULT_DIR,
  type DeleteOptions,
  deletePersistent,
  type OpenPersistentOptions,
  openPersistent,
  PersistentBuffer,
} from './user.ts';
export { UserBufferSource } from './user-source.ts';
export { groupName, userName } from './users.ts';
