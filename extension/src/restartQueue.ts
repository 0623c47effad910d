/**
 * Serialises daemon (re)starts: while one runs, any number of further requests collapse into a
 * single follow-up run, so two daemons never run at once and a burst of setting changes restarts
 * once. Pure: no `vscode`.
 */
export class RestartQueue {
  private running: Promise<void> | undefined;
  private queued: Promise<void> | undefined;
  private disposed = false;

  constructor(private readonly job: () => Promise<void>) {}

  /** Resolves when a run that started after this call has finished (rejects with its error). */
  request(): Promise<void> {
    if (this.disposed) return Promise.resolve();
    if (!this.running) {
      this.running = this.start();
      return this.running;
    }
    if (!this.queued) {
      const after = this.running.then(
        () => undefined,
        () => undefined,
      );
      this.queued = after.then(() => {
        this.queued = undefined;
        if (this.disposed) return;
        this.running = this.start();
        return this.running;
      });
    }
    return this.queued;
  }

  get busy(): boolean {
    return this.running !== undefined;
  }

  /** No new runs start; a queued one is dropped. Resolves when the current run ends. */
  async dispose(): Promise<void> {
    this.disposed = true;
    try {
      await this.running;
    } catch {
      // reported by whoever requested it
    }
  }

  private start(): Promise<void> {
    const run = (async () => {
      await this.job();
    })();
    const tracked = run.finally(() => {
      if (this.running === tracked) this.running = undefined;
    });
    return tracked;
  }
}
