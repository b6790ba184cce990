/**
 * In-process wake-up signal: "there is new work" (e.g. a delivery was committed), so the
 * dispatcher reacts at once instead of waiting for its next poll. Signals coalesce.
 */
export class WakeSignal {
  private listeners = new Set<() => void>();

  notify(): void {
    for (const listener of this.listeners) listener();
  }

  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
