/** Status integers never change (spec: Status code ranges and values). */
export const StatusCode = {
  OperationCreated: 100,
  Started: 101,
  Stopped: 102,
  Running: 103,
  Cancelling: 104,
  Pending: 105,
  Starting: 106,
  Stopping: 107,
  Aborting: 108,
  Freezing: 109,
  Frozen: 110,
  Thawed: 111,
  Success: 200,
  Failure: 400,
  Cancelled: 401,
} as const;
export type StatusCodeValue = (typeof StatusCode)[keyof typeof StatusCode];

const NAMES: Record<number, string> = {
  100: 'Operation created',
  101: 'Started',
  102: 'Stopped',
  103: 'Running',
  104: 'Cancelling',
  105: 'Pending',
  106: 'Starting',
  107: 'Stopping',
  108: 'Aborting',
  109: 'Freezing',
  110: 'Frozen',
  111: 'Thawed',
  200: 'Success',
  400: 'Failure',
  401: 'Cancelled',
};

export function statusName(code: number): string {
  return NAMES[code] ?? 'Unknown';
}

/** Final operation states: Success, Failure, Cancelled. */
export function isFinalStatus(code: number): boolean {
  return code >= 200;
}
