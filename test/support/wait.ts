// Waiting for a state, not for a time (test/README.md, "Waiting"): poll a condition until it
// holds, and fail with what was awaited once a deadline passes. The deadline is a fuse against
// a hang, far beyond what the state normally takes; it is never what the test checks.

/**
 * Polls `condition` every `intervalMs` until it returns true (or a truthy value, which is
 * returned); throws `timed out waiting for <what>` after `timeoutMs`, with `detail()` if given.
 */
export async function waitUntil<T>(
  what: string,
  condition: () => T | Promise<T>,
  { timeoutMs = 60_000, intervalMs = 20, detail }: { timeoutMs?: number; intervalMs?: number; detail?: () => string } = {},
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await condition();
    if (value) return value as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${detail ? `: ${detail()}` : ''}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
