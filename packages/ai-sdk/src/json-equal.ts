/**
 * Whether two values are the same JSON document: key order does not matter and a property
 * whose value is `undefined` counts as absent (a stored message has no such properties; the
 * one a client sends back, or the AI SDK builds, may).
 */
export function jsonEqual(left: unknown, right: unknown): boolean {
  if (left === right) return true;
  if (typeof left !== 'object' || typeof right !== 'object' || left === null || right === null) {
    return false;
  }
  if (Array.isArray(left) || Array.isArray(right)) {
    if (!Array.isArray(left) || !Array.isArray(right) || left.length !== right.length) return false;
    return left.every((item, index) => jsonEqual(item, right[index]));
  }
  const leftKeys = definedKeys(left);
  const rightKeys = definedKeys(right);
  if (leftKeys.length !== rightKeys.length) return false;
  const rightRecord = right as Record<string, unknown>;
  return leftKeys.every(
    (key) =>
      Object.hasOwn(rightRecord, key) &&
      jsonEqual((left as Record<string, unknown>)[key], rightRecord[key]),
  );
}

function definedKeys(value: object): string[] {
  return Object.keys(value).filter((key) => (value as Record<string, unknown>)[key] !== undefined);
}
