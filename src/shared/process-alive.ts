// Whether a process id is alive, for the files a process leaves behind (temporary uploads, the
// embedded PostgreSQL's owner record): signal 0 checks without sending anything.
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists, owned by someone else.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
