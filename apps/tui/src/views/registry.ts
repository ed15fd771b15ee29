/**
 * The views of evtrace-view. A view is a module `views/<name>.tsx` exporting a {@link ViewDefinition}; adding it to
 * the list in `views/index.ts` (one line) gives it a number key, a place in the Tab order, its keys in the footer and
 * in the help overlay.
 */
import type { EventClass } from '@evtrace/trace-format';
import type { ReactElement } from 'react';
import type { ViewerSource } from '../data/source.ts';
import type { EventStore } from '../data/store.ts';

/** What the status bar shows besides the source, rate and loss; views report it through `onStatus`. */
export interface ViewStatus {
  /** The applied filter expression. */
  readonly filter?: string;
  /** e.g. "1,234 of 1,000,000 match" or "filtering 40%". */
  readonly filterNote?: string;
}

export interface ViewProps {
  readonly source: ViewerSource;
  /** The source's events as of the last refresh (unchanged while paused). */
  readonly store: EventStore;
  /** Increases with each refresh of a live source (not while paused). */
  readonly tick: number;
  readonly paused: boolean;
  /** Whether this view is on screen and receives keys. */
  readonly active: boolean;
  /** Columns and rows the view may use. */
  readonly width: number;
  readonly height: number;
  onStatus(status: ViewStatus): void;
}

export interface ViewDefinition {
  /** Short name, for the tab bar and the help. */
  readonly title: string;
  /** The view's own keys for the footer and the help overlay: [key, what it does]. */
  readonly keys: readonly (readonly [string, string])[];
  readonly Component: (props: ViewProps) => ReactElement;
  /**
   * Whether the view has anything to show for a source with these event classes; a view that has not is left out of
   * the tabs (the Branches view on a kmem trace). Absent: always shown.
   */
  readonly shows?: (classes: readonly EventClass[]) => boolean;
}
