/**
 * An operation sluice cannot cost: deeper or wider than the walk's caps, a slicing argument that is not a
 * size, a cost directive with arguments sluice cannot use, a cost above 1e12. Answered as the server's
 * validation error; the operation does not run and is charged nothing.
 */
export class CostError extends Error {
  override readonly name = 'CostError';
}
