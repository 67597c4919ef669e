import type { PolicySet } from './policy-set.js';

/** One consume or peek on its way through the limiter's stages. */
export interface Attempt {
  /** The policies it is decided by: the limiter's, or the call's own. */
  readonly set: PolicySet;
  /** The caller's key. */
  readonly key: string;
  /** Its hash-tag body (keyTag). */
  readonly tag: string;
  readonly cost: number;
  /** Read without charging. */
  readonly peek: boolean;
  /** An idempotent consume's id: a retry of an id already charged is allowed and charges nothing. */
  readonly id?: string;
  /** The concurrent slot it takes, when a policy counts requests in flight: a unique id. */
  readonly slot?: string;
  /** The decision made for it goes to the caller as it is, so the stage that makes it also finishes it (shadow mode, the denied event). */
  readonly final: boolean;
}
