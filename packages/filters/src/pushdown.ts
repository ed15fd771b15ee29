import type { FilterNode, ParsedFilter } from './ast.ts';
import { MAX_FILTER_BYTES } from './parser.ts';
import { renderTree } from './tree.ts';

export interface PushDownOptions {
  /** Byte budget of the kernel filter (strictly below the kernel's 4096 by default). */
  readonly maxBytes?: number;
}

/** What user space needs to evaluate its part exactly as the kernel would. */
export interface UserSpaceNeeds {
  /** Names `COMM`/`comm`: the task name at event time, so renames must be replayed (CommTracker). */
  readonly comm: boolean;
  /** Names `CPU`/`cpu`/`common_cpu`: the recording CPU of each event. */
  readonly cpu: boolean;
  /** Uses `.function`: a symbol table of the traced kernel. */
  readonly symbols: boolean;
}

export interface PushDownPlan {
  /** The filter to write to tracefs, or undefined when nothing can go to the kernel. */
  readonly kernel: string | undefined;
  /** The part user space must evaluate (same language), or undefined when the kernel filter is exact. */
  readonly userSpace: string | undefined;
  /** What the user-space part needs. */
  readonly needs: UserSpaceNeeds;
  /** Why each part went where it did. */
  readonly notes: readonly string[];
}

const encoder = new TextEncoder();

/**
 * Splits a filter between the kernel and user space. The top-level `&&` terms are independent: each goes to the
 * kernel while the kernel string stays within the byte budget; terms that read a `char *` field or a `.ustring` go
 * to the kernel whatever the budget (user space cannot read them from a recording). The rest is evaluated in user
 * space, after the kernel's part, which preserves the meaning because the terms are and-ed.
 */
export function planPushDown(filter: ParsedFilter, options: PushDownOptions = {}): PushDownPlan {
  const budget = options.maxBytes ?? MAX_FILTER_BYTES - 1;
  const root = filter.root;
  if (root === undefined) return { kernel: undefined, userSpace: undefined, needs: none(), notes: ['empty filter'] };
  const terms = root.kind === 'and' ? root.children : [root];
  const kernel: FilterNode[] = [];
  const user: FilterNode[] = [];
  const notes: string[] = [];
  let used = 0;
  const sep = encoder.encode(' && ').length;
  for (const term of terms) {
    const text = renderTree(filter, term);
    const size = encoder.encode(text).length + (kernel.length > 0 ? sep + 2 : 2);
    const preds = predicatesOf(term);
    const kernelOnly = preds.some((i) => {
      const p = filter.predicates[i]!;
      return p.field.kind === 'pointer-string' || p.ustring;
    });
    if (kernelOnly || used + size <= budget) {
      kernel.push(term);
      used += size;
      if (kernelOnly && used > budget) notes.push(`'${text}' reads kernel memory: kernel only, over the budget`);
    } else {
      user.push(term);
      notes.push(`'${text}' exceeds the kernel filter budget of ${budget} bytes: evaluated in user space`);
    }
  }
  const userPreds = user.flatMap(predicatesOf).map((i) => filter.predicates[i]!);
  return {
    kernel: kernel.length > 0 ? renderTree(filter, join(kernel)) : undefined,
    userSpace: user.length > 0 ? renderTree(filter, join(user)) : undefined,
    needs: {
      comm: userPreds.some((p) => p.field.kind === 'comm'),
      cpu: userPreds.some((p) => p.field.kind === 'cpu'),
      symbols: userPreds.some((p) => p.test.type === 'function'),
    },
    notes,
  };
}

function none(): UserSpaceNeeds {
  return { comm: false, cpu: false, symbols: false };
}

function join(terms: FilterNode[]): FilterNode {
  return terms.length === 1 ? terms[0]! : { kind: 'and', children: terms };
}

function predicatesOf(node: FilterNode): number[] {
  const out: number[] = [];
  const stack = [node];
  while (stack.length > 0) {
    const n = stack.pop()!;
    if (n.kind === 'pred') out.push(n.index);
    else if (n.kind === 'not') stack.push(n.child);
    else stack.push(...n.children);
  }
  return out;
}
