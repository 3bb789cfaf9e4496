// Ids of jobs, models and the like are UUIDs; a request may write them in either case.

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Whether `value` is a UUID (8-4-4-4-12 hex digits, either case). */
export function isUuid(value: string): boolean {
  return UUID.test(value);
}
