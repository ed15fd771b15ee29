import { branchesView } from './branches.tsx';
import { cpusView } from './cpus.tsx';
import { eventsView } from './events.tsx';
import { hardwareView } from './hardware.tsx';
import { memoryView } from './memory.tsx';
import type { ViewDefinition } from './registry.ts';
import { sessionsView } from './sessions.tsx';

/** The views in Tab order; number keys 1..9 pick them. Add a view with one line here. */
export const VIEWS: readonly ViewDefinition[] = [
  eventsView,
  cpusView,
  sessionsView,
  branchesView,
  memoryView,
  hardwareView,
];
