/** The stream moved on since it was read: re-read, re-decide, retry. */
export class ConcurrencyError extends Error {
  readonly streamId: string;
  readonly expectedVersion: number;

  constructor(streamId: string, expectedVersion: number) {
    super(`stream ${streamId} is no longer at version ${expectedVersion}`);
    this.name = 'ConcurrencyError';
    this.streamId = streamId;
    this.expectedVersion = expectedVersion;
  }
}
