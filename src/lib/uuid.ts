const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** True for a UUID in its text form: ids are uuid columns, and anything else would make PostgreSQL throw (a 500) instead of a 404. */
export function isUuid(value: string): boolean {
  return UUID.test(value);
}
